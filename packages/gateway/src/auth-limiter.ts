import { clientOf } from "./client-address.js";

/** Failed connects allowed per address per window before further attempts are refused outright. */
const MAX_AUTH_FAILURES = 5;
const WINDOW_MS = 60_000;
/** Addresses remembered at most (the oldest window is forgotten first), so a spray of addresses cannot grow memory. */
const MAX_ADDRESSES = 10_000;

/**
 * Limits failed gateway logins per client (an address, or an IPv6 /64, see `clientOf`): after 5
 * failures in a minute, that client is refused without checking its token until the minute is over.
 */
export class AuthFailureLimiter {
  readonly #failures = new Map<string, { count: number; resetAt: number }>();

  /** True while the address has used up its failures for the current window. */
  blocked(address: string): boolean {
    const entry = this.#failures.get(clientOf(address));
    return entry !== undefined && entry.resetAt > Date.now() && entry.count >= MAX_AUTH_FAILURES;
  }

  /** Counts one failed login from the address. */
  fail(from: string): void {
    const address = clientOf(from);
    const now = Date.now();
    const current = this.#failures.get(address);
    const entry = current && current.resetAt > now ? current : { count: 0, resetAt: now + WINDOW_MS };
    entry.count++;
    this.#failures.delete(address);
    this.#failures.set(address, entry);
    if (this.#failures.size > MAX_ADDRESSES) {
      const oldest = this.#failures.keys().next().value;
      if (oldest !== undefined) this.#failures.delete(oldest);
    }
  }
}
