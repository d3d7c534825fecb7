import { randomInt } from "node:crypto";
import type { Redis } from "ioredis";

// No look-alikes (0/O, 1/I/L), so a code read on a phone is typed right.
const ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/**
 * Pending tool approvals in Redis: a run asks with a short code, the user
 * answers `/approve CODE` or `/deny CODE` in the same session (from any
 * process), and the run waits for the answer or the timeout.
 */
export class ApprovalStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  #key(code: string): string {
    return `${this.prefix}:approval:${code}`;
  }

  /** Opens a pending approval for a session; returns its code. */
  async open(sessionKey: string, ttlMs: number): Promise<string> {
    for (;;) {
      const code = Array.from({ length: 6 }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");
      if (
        await this.redis.set(
          this.#key(code),
          JSON.stringify({ sessionKey, answer: null }),
          "PX",
          ttlMs + 60_000,
          "NX",
        )
      )
        return code;
    }
  }

  /** Records the user's answer; false when no approval with that code is pending in that session. */
  async answer(code: string, sessionKey: string, approve: boolean): Promise<boolean> {
    const key = this.#key(code.toUpperCase());
    const raw = await this.redis.get(key);
    if (!raw) return false;
    const pending = JSON.parse(raw) as { sessionKey: string; answer: boolean | null };
    if (pending.sessionKey !== sessionKey || pending.answer !== null) return false;
    await this.redis.set(key, JSON.stringify({ sessionKey, answer: approve }), "KEEPTTL");
    return true;
  }

  /** Waits for the answer; false on refusal, timeout, or abort. */
  async wait(code: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !signal?.aborted) {
      const raw = await this.redis.get(this.#key(code));
      const answer = raw ? (JSON.parse(raw) as { answer: boolean | null }).answer : false;
      if (answer !== null) {
        await this.redis.del(this.#key(code));
        return answer === true;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    await this.redis.del(this.#key(code));
    return false;
  }
}
