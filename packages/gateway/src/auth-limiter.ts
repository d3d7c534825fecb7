import { isIP } from "node:net";

/** Failed connects allowed per address per window before further attempts are refused outright. */
const MAX_AUTH_FAILURES = 5;
const WINDOW_MS = 60_000;
/** Addresses remembered at most (the oldest window is forgotten first), so a spray of addresses cannot grow memory. */
const MAX_ADDRESSES = 10_000;

/**
 * Who a failed login is counted against: an IPv4 address (also written IPv4-mapped, `::ffff:a.b.c.d`), or an
 * IPv6 address's /64 network, since one host is given a whole /64 and could take a new address per guess.
 */
export function clientOf(address: string): string {
  const lower = address.toLowerCase().replace(/%.*$/, "");
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/.exec(lower);
  if (mapped) return mapped[1] as string;
  if (isIP(lower) !== 6) return address;
  const [head = "", tail] = lower.split("::");
  const groups = (part: string | undefined) => (part ? part.split(":") : []);
  // A dotted IPv4 tail (64:ff9b::1.2.3.4) is two groups; only the first four are kept.
  const width = (part: string[]) => part.reduce((n, g) => n + (g.includes(".") ? 2 : 1), 0);
  const left = groups(head);
  const right = groups(tail);
  const zeros = tail === undefined ? [] : Array(8 - width(left) - width(right)).fill("0");
  const all = [...left, ...zeros, ...right];
  return `${all
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}

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
