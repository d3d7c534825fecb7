/**
 * A number of bytes shared by requests that hold memory at once: `take` reserves some (false when they
 * would not fit), `give` returns them. Webhook routes hold the bodies of callers not verified yet
 * through one (`unverifiedBodies`), so strangers sending large bodies slowly can hold at most that much
 * memory, instead of a body's cap times every connection they can open.
 */
export class ByteBudget {
  #held = 0;

  constructor(readonly limit: number) {}

  /** Reserves `bytes`; false (and nothing reserved) when they would exceed the limit. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.limit) return false;
    this.#held += bytes;
    return true;
  }

  /** Returns bytes `take` reserved. */
  give(bytes: number): void {
    this.#held = Math.max(0, this.#held - bytes);
  }

  /** Bytes reserved now. */
  get held(): number {
    return this.#held;
  }
}

/**
 * The process's budget for webhook bodies whose caller is not verified yet (a signature over the body,
 * as Slack's, can only be checked once the body is read): 64 MiB, 64 bodies at the 1 MiB cap.
 */
export const unverifiedBodies = new ByteBudget(64 * 1024 * 1024);
