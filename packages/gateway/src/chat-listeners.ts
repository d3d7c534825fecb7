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
// What a listener hears of its own echo: "!<id>".
const ECHO = "!";
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
 * heartbeat could have come; while its own echo, sent each heartbeat, does not come back), it takes it
 * that someone listens, as it does before it listens at all. So a client is missed at most for as long as
 * an announcement takes to arrive (or, after a lost one, until the next heartbeat): the one connected to
 * this process's own gateway not at all, since this process counts its own clients itself (an agent
 * thread has no gateway: it hears of the main thread's clients as another process does).
 */
export class ChatListeners {
  readonly #channel: string;
  readonly #id = randomUUID();
  /** Connections to this process's gateway. */
  #here = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  /** Gateways with clients, by id: until when that holds without another announcement. */
  readonly #elsewhere = new Map<string, number>();
  /**
   * From when (monotonic ms) the announcements heard are the whole story; undefined before listening, and
   * infinite while its subscription is down or lapsed (unsure).
   */
  #sureFrom: number | undefined;
  #echo: NodeJS.Timeout | undefined;
  /** Whether its last echo came back (none sent yet counts as back). */
  #echoHeard = true;

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
    subscriber.on("ready", () => this.#unsureFor(this.#aHeartbeat));
    this.#unsureFor(this.#aHeartbeat);
    await subscriber.subscribe(this.#channel);
    this.#echo = setInterval(() => this.#sendEcho(), this.timing.heartbeatMs);
    this.#echo.unref();
    this.#sendEcho();
    this.#ask();
  }

  // Long enough for a heartbeat to come.
  get #aHeartbeat(): number {
    return this.timing.heartbeatMs + 1000;
  }

  #unsureFor(ms: number): void {
    this.#sureFrom = performance.now() + ms;
  }

  // Asks the gateways with clients to say so now (subscribed, so their answers are heard): unsure until they
  // could have answered since Redis passed the question on (one busy past that says so at its next heartbeat).
  #ask(): void {
    this.redis.publish(this.#channel, ASK).then(
      () => this.#unsureFor(Math.min(ANSWER_WITHIN_MS, this.#aHeartbeat)),
      () => {},
    );
  }

  // Its own echo, each heartbeat: a subscription that lapsed without a word (a cluster's subscriber moved
  // to another node, a connection half open) shows as an echo not heard back by the next one, and the
  // announcements of that time may be lost: unsure from then until a heartbeat after it is heard again.
  #sendEcho(): void {
    if (!this.#echoHeard) this.#sureFrom = Number.POSITIVE_INFINITY;
    this.#echoHeard = false;
    this.redis.publish(this.#channel, `${ECHO}${this.#id}`).catch(() => {});
  }

  #heard(message: string): void {
    if (message === ASK) {
      if (this.#here > 0) this.#announce(1);
      return;
    }
    if (message === `${ECHO}${this.#id}`) {
      if (this.#sureFrom === Number.POSITIVE_INFINITY) this.#unsureFor(this.#aHeartbeat);
      this.#echoHeard = true;
      return;
    }
    const at = message.lastIndexOf("|");
    if (at <= 0) return;
    const id = message.slice(0, at);
    const forMs = Number(message.slice(at + 1));
    if (forMs > 0) this.#elsewhere.set(id, performance.now() + forMs);
    else this.#elsewhere.delete(id);
  }

  /** Whether a web client may hear a chat event now (see the class). */
  get any(): boolean {
    if (this.#here > 0) return true;
    const now = performance.now();
    if (this.#sureFrom === undefined || now < this.#sureFrom) return true;
    for (const [id, until] of this.#elsewhere) {
      if (until > now) return true;
      this.#elsewhere.delete(id);
    }
    return false;
  }

  /** Stops the heartbeat and the echo (a stopping gateway says it has no clients left). */
  close(): void {
    clearInterval(this.#echo);
    if (this.#here > 0) this.clientsHere(0);
  }
}
