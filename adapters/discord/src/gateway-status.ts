import { type ChannelStatus, ChannelStatusCell, type HubLogger } from "@hub/core";

/** Close codes after which Discord will not let the bot back in until the operator fixes something. */
const FATAL_CLOSES: Record<number, string> = {
  4004: "Discord refused the bot token (close 4004); set a valid channels.discord.token or DISCORD_BOT_TOKEN",
  4010: "Discord refused the shard settings (close 4010)",
  4011: "Discord requires sharding for this bot (close 4011)",
  4012: "Discord refused the gateway API version (close 4012)",
  4013: "Discord refused the gateway intents as invalid (close 4013)",
  4014: "Discord refused the Message Content intent (close 4014); enable it in the Developer Portal under Bot > Privileged Gateway Intents, then restart",
};

/** Why a gateway close happened, in words an operator can act on. */
export function describeClose(code: number | undefined): string {
  if (code === undefined) return "the gateway connection closed";
  const fatal = FATAL_CLOSES[code];
  if (fatal) return fatal;
  if (code === 4200) return "the gateway stopped acknowledging heartbeats (a zombie connection); resuming";
  if (code === 1006) return "the gateway connection dropped (close 1006); resuming";
  if (code === 1005) return "the gateway closed without a status (close 1005); resuming";
  if (code === 1000 || code === 1001)
    return `the gateway closed the connection (close ${code}); identifying again`;
  return `the gateway closed the connection (close ${code}); reconnecting`;
}

/** The connection state of one Discord account, as the shard events tell it. */
export class GatewayStatus {
  readonly #cell: ChannelStatusCell;
  #lastClose: number | undefined;
  #zombie = false;

  constructor(log: HubLogger) {
    this.#cell = new ChannelStatusCell(({ state, reason }) => {
      const line = { state, ...(reason ? { reason } : {}) };
      if (state === "failed") log.error(line, "discord channel failed");
      else if (state === "reconnecting") log.warn(line, "discord gateway reconnecting");
      else log.info(line, `discord ${state}`);
    });
    this.#cell.set("connecting");
  }

  get current(): ChannelStatus {
    return this.#cell.get();
  }

  /** A close code seen on the shard (the last one explains the next reconnect). */
  closed(code: number): void {
    this.#lastClose = code;
  }

  /** discord.js's debug lines tell a zombie close (code 4200, "Zombie connection") from others. */
  debug(message: string): void {
    if (message.includes("Zombie connection")) this.#zombie = true;
  }

  ready(): void {
    this.#zombie = false;
    this.#lastClose = undefined;
    this.#cell.set("connected");
  }

  reconnecting(): void {
    const reason = this.#zombie ? describeClose(4200) : describeClose(this.#lastClose);
    this.#cell.set("reconnecting", { reason });
  }

  failed(reason: string): void {
    this.#cell.set("failed", { reason });
  }

  /** The shard gave up (fatal close code). */
  disconnected(code: number): void {
    this.#cell.set("failed", { reason: describeClose(code) });
  }

  /** Logging in; with a reason and a time, the previous attempt failed and the next is due then. */
  connecting(reason?: string, nextRetryAt?: number): void {
    if (reason) this.#cell.set("reconnecting", { reason, ...(nextRetryAt ? { nextRetryAt } : {}) });
    else this.#cell.set("connecting");
  }

  stopped(): void {
    this.#cell.set("stopped");
  }
}
