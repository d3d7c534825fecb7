import {
  describeClose,
  describeOwnClose,
  RESUMABLE_INVALID_SESSION,
  type Recovery,
} from "./close-reasons.js";

/** One "Destroying shard" debug line of @discordjs/ws: its reason, close code and recovery. */
interface Destroying {
  reason: string;
  code: number;
  recovery: Recovery;
}

const INVALID_SESSION = /Invalid session; will attempt to resume: (true|false)/;
const DESTROYING = /Destroying shard\n\tReason: (.*)\n\tCode: (\d+)\n\tRecover: (\w+)/;
const NEEDS_CLOSING = /Needs closing: (true|false)/;

/**
 * Why the gateway connection closed, read from the debug lines @discordjs/ws
 * emits (discord.js passes them on as `debug` events). When the client closes
 * the connection itself (op 7, op 9, a zombie connection) it logs "Destroying
 * shard" with its reason, then "Needs closing: true", and only then reports the
 * close. When Discord closes it, the close is reported first and the
 * "Destroying shard" line with Discord's code follows in the same call.
 */
export class CloseCause {
  #destroying: Destroying | undefined;
  #own: Destroying | undefined;
  #resumable: boolean | undefined;

  /**
   * Reads one discord.js debug line. Returns a note worth logging when the line
   * says something the close events never will (a session invalidated but resumed
   * on the same connection).
   */
  observe(line: string): string | undefined {
    const invalid = INVALID_SESSION.exec(line);
    if (invalid) {
      this.#resumable = invalid[1] === "true";
      return this.#resumable ? RESUMABLE_INVALID_SESSION : undefined;
    }
    const destroying = DESTROYING.exec(line);
    if (destroying) {
      const [, reason = "none", code, recover] = destroying;
      this.#destroying = {
        reason,
        code: Number(code),
        recovery: recover === "Resume" ? "resume" : "identify",
      };
      return undefined;
    }
    if (NEEDS_CLOSING.exec(line)?.[1] === "true") this.#own = this.#destroying;
    return undefined;
  }

  /** Why the connection that was just reported closed; forgets it, so the next close starts afresh. */
  take(): string {
    const own = this.#own;
    const seen = this.#destroying;
    const resumable = this.#resumable;
    this.reset();
    if (own) return describeOwnClose(own.reason, own.recovery, resumable);
    if (seen) return describeClose(seen.code, seen.recovery);
    return describeClose(undefined);
  }

  /** Forgets what was read (the connection is ready again). */
  reset(): void {
    this.#destroying = undefined;
    this.#own = undefined;
    this.#resumable = undefined;
  }
}
