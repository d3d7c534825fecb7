import { z } from "zod";

/** How a Redis URL is written, for messages. */
const REDIS_URL_FORM = "redis://[:password@]host[:port][/db], e.g. redis://127.0.0.1:6379/0";

// The port as written: after the last ":" of the host part (an IPv6 host is in brackets).
function writtenPort(url: string): string | undefined {
  const authority = url.slice(url.indexOf("//") + 2).split(/[/?#]/)[0] ?? "";
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1);
  return /^(?:\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec(hostPort)?.[1];
}

function isDatabase(value: string | null): boolean {
  return value === null || /^\d+$/.test(value);
}

/**
 * What is wrong with one Redis URL (no list), as a phrase that quotes no part
 * of it (it may hold a password), or undefined when ioredis can use it as it
 * is: `redis://` or `rediss://`, a host, a port from 1 to 65535, and a
 * database that is a whole number.
 */
export function redisUrlProblem(url: string): string | undefined {
  if (!/^rediss?:\/\//i.test(url)) return 'it does not start with "redis://" or "rediss://"';
  const port = writtenPort(url);
  if (port !== undefined && port !== "" && (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535))
    return "its port is not a number from 1 to 65535";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "it cannot be read as a URL (a host name has no spaces, and a : / ? # or @ in the password must be percent-encoded)";
  }
  if (!parsed.hostname) return "it names no host";
  const path = parsed.pathname === "/" ? "" : parsed.pathname.slice(1);
  if (!isDatabase(path || null) || !isDatabase(parsed.searchParams.get("db")))
    return "its database (the number after the host and /) is not a whole number";
  return undefined;
}

function checkUrls(urls: string[], ctx: z.core.$RefinementCtx<string>): void {
  for (const url of urls) {
    const problem = redisUrlProblem(url);
    if (problem) {
      ctx.addIssue({ code: "custom", message: `must be written ${REDIS_URL_FORM}, but ${problem}` });
      return;
    }
  }
}

/** One Redis URL (a single node: a cluster seed, or a single Redis). */
export const RedisNodeUrlSchema = z.string().superRefine((url, ctx) => checkUrls([url], ctx));

/** The URLs of a comma-separated list (a Redis Cluster's seed nodes), trimmed, empty ones left out. */
export function redisUrlsOf(value: string): string[] {
  return value
    .split(",")
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
}

/**
 * `redis.url` / `REDIS_URL`: one Redis URL, or a comma-separated list of them
 * (the seed nodes of a Redis Cluster); each must be one `redisUrlProblem` accepts.
 */
export const RedisUrlSchema = z.string().superRefine((value, ctx) => {
  const urls = redisUrlsOf(value);
  if (urls.length === 0)
    ctx.addIssue({ code: "custom", message: `must be written ${REDIS_URL_FORM}, but it is empty` });
  checkUrls(urls, ctx);
});

/** A URL (or comma-separated list of URLs) with user and password replaced by `***`, for messages. */
export function redactUrl(url: string): string {
  // Up to the last "@" before the path: a password may hold a raw "@" (the URL parser splits at the last).
  // ioredis also reads a password (and username) from the query string.
  return url.replace(/\/\/[^/]*@/g, "//***@").replace(/([?&](?:password|username)=)[^&#,]*/gi, "$1***");
}
