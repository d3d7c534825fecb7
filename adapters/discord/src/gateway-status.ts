import { type ChannelStatus, ChannelStatusCell, type HubLogger } from "@hub/core";
import { CloseCause } from "./close-cause.js";
import { describeClose } from "./close-reasons.js";

/** The connection state of one Discord account, as the shard events tell it. */
export class GatewayStatus {
  readonly #cell: ChannelStatusCell;
  readonly #log: HubLogger;
  readonly #cause = new CloseCause();
  /** Set while a change is logged by its caller (one line per failed attempt, not per change). */
  #quiet = false;
  /** The initial "connecting", set quietly, is not said yet (see `starting`). */
  #unsaid = true;
  /** The reason shown while a 401 on a REST call says the token was refused (see `tokenRefused`). */
  #tokenRefusal: string | undefined;

  constructor(log: HubLogger) {
    this.#log = log;
    this.#cell = new ChannelStatusCell(({ state, reason }) => {
      if (this.#quiet) return;
      const line = { state, ...(reason ? { reason } : {}) };
      if (state === "failed") log.error(line, "discord channel failed");
      else if (state === "reconnecting") log.warn(line, "discord gateway reconnecting");
      else log.info(line, `discord ${state}`);
    });
    // Not said here: every process builds the adapter (to send, to fetch media), and only one
    // with the ingress role starts it (`starting`).
    this.#quietly(() => this.#cell.set("connecting"));
  }

  /**
   * The adapter's first start: the initial "connecting" is said now, by the process that connects
   * (later starts, a retry or a restart, are said by the state they change).
   */
  starting(): void {
    if (this.#unsaid && this.#cell.get().state === "connecting")
      this.#log.info({ state: "connecting" }, "discord connecting");
    this.#unsaid = false;
  }

  get current(): ChannelStatus {
    return this.#cell.get();
  }

  /** A discord.js debug line: @discordjs/ws says there why it closes a connection. */
  debug(message: string): void {
    const note = this.#cause.observe(message);
    if (note) this.#log.info({ reason: note }, "discord gateway session invalidated");
  }

  ready(): void {
    this.#cause.reset();
    this.#cell.set("connected");
  }

  /**
   * The shard closed and reconnects. A close Discord sent is reported before
   * @discordjs/ws logs its code (in the same call), so the reason is read once
   * that call has finished.
   */
  reconnecting(): void {
    queueMicrotask(() => this.#cell.set("reconnecting", { reason: this.#cause.take() }));
  }

  /**
   * A connection attempt failed, logged as one line. With `retryInMs` this
   * adapter tries again then (a warning); without, the hub's supervisor retries
   * and logs the failure itself (debug here).
   */
  unreachable(reason: string, retryInMs?: number): void {
    if (retryInMs === undefined) this.#log.debug({ reason }, "discord could not connect");
    else
      this.#log.warn(
        { reason, retryInMs },
        `discord could not connect; next try in ${Math.ceil(retryInMs / 1000)} s`,
      );
    const next = retryInMs === undefined ? {} : { nextRetryAt: Date.now() + retryInMs };
    this.#quietly(() => this.#cell.set("reconnecting", { reason, ...next }));
  }

  #quietly(change: () => void): void {
    this.#quiet = true;
    try {
      change();
    } finally {
      this.#quiet = false;
    }
  }

  /**
   * Discord refused the bot as configured, at a login. Not logged here: the
   * refusal is thrown, and whoever catches it (the hub's supervisor) says it
   * in one line; a second one here would repeat it.
   */
  failed(reason: string): void {
    this.#quietly(() => this.#cell.set("failed", { reason }));
  }

  /**
   * Discord refused the bot token on a REST call (401) while connected: failed with what to do (said once),
   * until a call is accepted again (`tokenAccepted`).
   */
  tokenRefused(reason: string): void {
    if (this.#cell.get().state !== "connected") return;
    this.#tokenRefusal = reason;
    this.#cell.set("failed", { reason });
  }

  /** A REST call went through: a token refusal this status shows is over. */
  tokenAccepted(): void {
    if (this.#tokenRefusal === undefined) return;
    if (this.#cell.get().reason === this.#tokenRefusal) this.#cell.set("connected");
    this.#tokenRefusal = undefined;
  }

  /** The shard gave up (fatal close code). */
  disconnected(code: number): void {
    this.#cell.set("failed", { reason: describeClose(code) });
  }

  /** Logging in; with a reason and a time, the previous attempt failed and the next is due then. */
  connecting(reason?: string, nextRetryAt?: number, standby = false): void {
    if (reason) this.#cell.set("reconnecting", { reason, ...(nextRetryAt ? { nextRetryAt } : {}), standby });
    else this.#cell.set("connecting");
  }

  stopped(): void {
    this.#cell.set("stopped");
  }
}
