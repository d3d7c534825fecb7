import { isIP } from "node:net";

/**
 * Who a connection or a failed login is counted against: an IPv4 address (also written IPv4-mapped,
 * `::ffff:a.b.c.d`), or an IPv6 address's /64 network, since one host is given a whole /64 and could
 * take a new address for every connection or guess.
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
