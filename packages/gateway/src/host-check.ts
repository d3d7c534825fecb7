import { isIP } from "node:net";

/**
 * Whether a request's `Host` header names this gateway as a browser on this machine would:
 * an IP address, `localhost` (or a name under `.localhost`), or a name the operator listed in
 * `gateway.allowedHosts` (exact, `.example.com` for it and every name under it, `*` for any).
 * A gateway listening on loopback refuses other names: a page that rebinds its own DNS name to
 * 127.0.0.1 would otherwise read the gateway from the operator's browser (DNS rebinding).
 * A request without a Host header is no browser's and passes.
 */
export function hostAllowed(hostHeader: string | undefined, allowedHosts: readonly string[]): boolean {
  if (hostHeader === undefined || hostHeader === "") return true;
  const name = hostnameOf(hostHeader);
  if (isIP(name) !== 0) return true;
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  return allowedHosts.some((allowed) => {
    const entry = allowed.toLowerCase();
    if (entry === "*") return true;
    if (entry.startsWith(".")) return name === entry.slice(1) || name.endsWith(entry);
    return name === entry;
  });
}

/** The name in a Host header, lower-cased, without its port or an IPv6 literal's brackets. */
function hostnameOf(hostHeader: string): string {
  const host = hostHeader.trim().toLowerCase();
  if (host.startsWith("[")) return host.slice(1, host.indexOf("]") === -1 ? undefined : host.indexOf("]"));
  const colon = host.lastIndexOf(":");
  const name = colon === -1 ? host : host.slice(0, colon);
  return name.endsWith(".") ? name.slice(0, -1) : name;
}

/** The sentence a refused request gets: what happened and what to set. */
export function hostRefusal(hostHeader: string): string {
  return `This hub's gateway listens on loopback and answers only to localhost or an IP address, not to "${hostnameOf(hostHeader)}". If you reach it through that name on purpose (a reverse proxy), add it to gateway.allowedHosts.\n`;
}
