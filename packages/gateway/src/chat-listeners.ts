import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";

/** How often a gateway with clients says so, and how long the others believe it (tests shorten both). */
export interface ChatListenersTiming {
  /** A gateway with clients says so this often. */
  heartbeatMs: number;
  /** A gateway not heard of for this long has no clients (it died without saying so); told to the others. */
  expiryMs: number;
}

const DEFAULT_TIMING: ChatListenersTiming = { heartbeatMs: 5000, expiryMs: 15_000 };
// A process that begins to listen asks; the gateways with clients answer at once.
const ASK = "?";
const ANSWER_WITHIN_MS = 2000;

/**
 * Whether any gateway process of the installation has a web client connected: a chat event (a run's end,
 * a web chat reply) is published only when someone may hear it. A gateway hears every event and routes it
 * to its clients; with none connected anywhere (a hub that only talks to Telegram, Discord, Slack or
 * WhatsApp), each run's end was a PUBLISH that every gateway process received and dropped, one Redis
 * command per message and a message to each gateway process.
 *
 * A gateway announces on `<prefix>:chat-listeners` when its first client connects and when its last
 * leaves, when asked, and every `heartbeatMs` while it has clients; every process hears the announcements
 * on its subscriber connection, and asks when it begins to listen. Where it cannot be sure (until the
 * gateways could have answered; while its subscriber connection is down, and after it came back until a
 * heartbeat could have come), it takes it that someone listens, as it does before it listens at all. So a
 * client is never missed for longer than an announcement takes to arrive: the one connected to this
 * process's own gateway not at all, since this process counts its own clients itself.
 */
export class ChatListeners {
  readonly #channel: string;
  readonly #id = randomUUID();
  /** Connections to this process's gateway. */
  #here = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  /** Gateways with clients, by id: until when that holds without another announcement. */
  readonly #elsewhere = new Map<string, number>();
  /** From when the announcements heard are the whole story; undefined before listening (unsure). */
  #sureFrom: number | undefined;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly timing: ChatListenersTiming = DEFAULT_TIMING,
  ) {
    this.#channel = `${prefix}:chat-listeners`;
  }

  /** The channel of the announcements. */
  get channel(): string {
    return this.#channel;
  }

  /** This process's gateway has `count` connections now. */
  clientsHere(count: number): void {
    const had = this.#here > 0;
    this.#here = count;
    if (had === count > 0) return;
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    if (count > 0) {
      this.#announce(1);
      this.#heartbeat = setInterval(() => this.#announce(1), this.timing.heartbeatMs);
      this.#heartbeat.unref();
    } else this.#announce(0);
  }

  // "<id>|<ms>": how long to take it that this gateway has clients without hearing from it again (0: none
  // now). Lost announcements are made good by the next heartbeat, or by the expiry of the last one heard.
  #announce(clients: 0 | 1): void {
    this.redis.publish(this.#channel, `${this.#id}|${clients ? this.timing.expiryMs : 0}`).catch(() => {});
  }

  /**
   * Hears the gateways' announcements on `subscriber` (a connection in subscriber mode, which may carry
   * other channels: its messages of other channels are left alone).
   */
  async listen(subscriber: Redis): Promise<void> {
    subscriber.on("message", (channel: string, message: string) => {
      if (channel === this.#channel) this.#heard(message);
    });
    // Announcements made while the connection is down are lost: unsure until a heartbeat could have come.
    subscriber.on("close", () => {
      this.#sureFrom = Number.POSITIVE_INFINITY;
    });
    // Back, it subscribes again by itself, but an answer to a question asked now could come before that.
    subscriber.on("ready", () => this.#unsureFor(this.timing.heartbeatMs + 1000));
    await subscriber.subscribe(this.#channel);
    this.#ask();
  }

  #unsureFor(ms: number): void {
    this.#sureFrom = Date.now() + ms;
  }

  // Asks the gateways with clients to say so now (subscribed, so their answers are heard): unsure until they
  // could have answered (one busy past that says so at its next heartbeat).
  #ask(): void {
    this.#unsureFor(Math.min(ANSWER_WITHIN_MS, this.timing.heartbeatMs + 1000));
    this.redis.publish(this.#channel, ASK).catch(() => this.#unsureFor(this.timing.heartbeatMs + 1000));
  }

  #heard(message: string): void {
    if (message === ASK) {
      if (this.#here > 0) this.#announce(1);
      return;
    }
    const at = message.lastIndexOf("|");
    if (at <= 0) return;
    const id = message.slice(0, at);
    const forMs = Number(message.slice(at + 1));
    if (forMs > 0) this.#elsewhere.set(id, Date.now() + forMs);
    else this.#elsewhere.delete(id);
  }

  /** Whether a web client may hear a chat event now (see the class). */
  get any(): boolean {
    if (this.#here > 0) return true;
    const now = Date.now();
    if (this.#sureFrom === undefined || now < this.#sureFrom) return true;
    for (const [id, until] of this.#elsewhere) {
      if (until > now) return true;
      this.#elsewhere.delete(id);
    }
    return false;
  }

  /** Stops the heartbeat (a stopping gateway says it has no clients left). */
  close(): void {
    if (this.#here > 0) this.clientsHere(0);
  }
}
