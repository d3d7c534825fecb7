import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { z } from "zod";
import { markUntrusted } from "./context/untrusted.js";
import type { AgentTool } from "./tools.js";

/** Limits and network rules of `http_fetch`. */
export interface HttpFetchOptions {
  /** Hosts that may be fetched: exact, or `*.example.com` for subdomains. */
  allowHosts: readonly string[];
  /** Ports that may be fetched (default 80 and 443). */
  ports?: readonly number[];
  /** Whether loopback, private, link-local and other internal addresses may be reached (default false). */
  allowPrivate?: boolean;
  /** Most bytes of body read, counted after decompression (default 1 MiB). */
  maxBytes?: number;
  /** Most time for the whole fetch, body included (default 10 s). */
  timeoutMs?: number;
  /** Resolves host names (default: the system resolver); every address it gives is checked. */
  lookup?: typeof dnsLookup;
}

const HttpFetchSchema = z.object({ url: z.string().min(1) });
const MAX_FETCH_CHARS = 100_000;

// Addresses that are not "the internet": a fetch must not reach the hub's own host or network by default.
const INTERNAL = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  INTERNAL.addSubnet(net, bits, "ipv4");
for (const [net, bits] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["64:ff9b::", 96],
] as const)
  INTERNAL.addSubnet(net, bits, "ipv6");

/** Whether an IP address is loopback, private, link-local, multicast or otherwise internal. */
export function isInternalAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return INTERNAL.check(mapped, "ipv4");
  const family = isIP(address);
  if (family === 0) return true;
  return INTERNAL.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** True when `host` is allowed by the list (exact, or `*.example.com` for subdomains). */
export function hostAllowed(host: string, allowHosts: readonly string[]): boolean {
  const h = host.toLowerCase();
  return allowHosts.some((a) => {
    const allowed = a.toLowerCase();
    return allowed.startsWith("*.") ? h.endsWith(allowed.slice(1)) : h === allowed;
  });
}

class RefusedAddressError extends Error {}

/**
 * A resolver for the connection itself: the addresses it hands the socket are
 * the ones checked, so a name that resolves inside, or is rebound between a
 * check and the connect, cannot get through.
 */
function guardedLookup(resolve: typeof dnsLookup, allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      const list = addresses as unknown as LookupAddress[];
      const inside = list.find((a) => isInternalAddress(a.address));
      if (!allowPrivate && inside)
        return callback(
          new RefusedAddressError(`${hostname} resolves to ${inside.address}, an internal address`),
          "",
          0,
        );
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      const first = list[0];
      if (!first) return callback(new Error(`${hostname} has no address`), "", 0);
      callback(null, first.address, first.family);
    });
  };
}

function decoded(res: IncomingMessage): Readable {
  const encoding = String(res.headers["content-encoding"] ?? "")
    .toLowerCase()
    .trim();
  if (encoding === "gzip" || encoding === "x-gzip") return res.pipe(createGunzip());
  if (encoding === "deflate") return res.pipe(createInflate());
  if (encoding === "br") return res.pipe(createBrotliDecompress());
  return res;
}

/** What one capped fetch got: the status, a redirect target, the body read, and why reading stopped early. */
interface FetchResult {
  status: number;
  location?: string | undefined;
  body: Buffer;
  cut?: "bytes" | "time" | undefined;
}

/**
 * GETs `url` with the limits: the connection goes only to checked addresses,
 * at most `maxBytes` are read after decompression (reading stops, and the
 * connection closes, the moment the cap is hit), and the whole fetch ends at
 * `timeoutMs` with what arrived so far.
 */
function fetchCapped(
  url: URL,
  o: { lookup: LookupFunction; maxBytes: number; timeoutMs: number; signal: AbortSignal },
): Promise<FetchResult> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let status = 0;
    let location: string | undefined;
    let body: Readable | undefined;
    let settled = false;
    const end = () => {
      settled = true;
      clearTimeout(timer);
      o.signal.removeEventListener("abort", onAbort);
      body?.destroy();
      req.destroy();
    };
    const finish = (cut?: "bytes" | "time") => {
      if (settled) return;
      end();
      resolve({ status, location, body: Buffer.concat(chunks), cut });
    };
    const fail = (error: unknown) => {
      if (settled) return;
      end();
      reject(error);
    };
    const timer = setTimeout(
      () => (status ? finish("time") : fail(new Error(`no answer within ${o.timeoutMs / 1000} s`))),
      o.timeoutMs,
    );
    const onAbort = () => fail(new Error("the run was stopped"));
    o.signal.addEventListener("abort", onAbort, { once: true });
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const headers = { "accept-encoding": "gzip, deflate, br", "user-agent": "hub-http-fetch" };
    const req = send(url, { method: "GET", headers, lookup: o.lookup, agent: false }, (res) => {
      status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        location = res.headers.location;
        return finish();
      }
      body = decoded(res);
      res.on("error", fail);
      body.on("error", fail);
      body.on("end", () => finish());
      body.on("data", (chunk: Buffer) => {
        const room = o.maxBytes - size;
        chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
        size += Math.min(chunk.length, room);
        if (size >= o.maxBytes) finish("bytes");
      });
    });
    req.on("error", fail);
    req.end();
  });
}

/** Why a URL may not be fetched, or undefined when it may. */
function refusal(parsed: URL, o: HttpFetchOptions): string | undefined {
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return "Refused: only http and https URLs can be fetched.";
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  if (!hostAllowed(host, o.allowHosts)) return `Refused: the host ${host} is not in the allowlist.`;
  const port = Number(parsed.port || (parsed.protocol === "https:" ? 443 : 80));
  const ports = o.ports ?? [80, 443];
  if (!ports.includes(port))
    return `Refused: port ${port} is not allowed (allowed: ${ports.join(", ")}; agent.tools.httpFetchPorts).`;
  // The connection skips name resolution for an IP literal, so its address is checked here.
  if (isIP(host) && !o.allowPrivate && isInternalAddress(host))
    return `Refused: ${host} is an internal address (agent.tools.httpFetchAllowPrivate allows it).`;
  return undefined;
}

/**
 * `http_fetch`: GET a URL on an allowlisted host and port (http/https only, no
 * redirects followed, internal addresses refused unless allowed, body capped
 * after decompression, whole fetch capped in time, at most 100,000 characters
 * returned). The page is someone else's text: the model gets it marked untrusted.
 * Off unless hosts are configured.
 */
export function httpFetchTool(o: HttpFetchOptions): AgentTool {
  const maxBytes = o.maxBytes ?? 1024 * 1024;
  const timeoutMs = o.timeoutMs ?? 10_000;
  const lookup = guardedLookup(o.lookup ?? dnsLookup, o.allowPrivate ?? false);
  return {
    spec: {
      name: "http_fetch",
      description: `Fetches a web page or API with GET. Allowed hosts: ${o.allowHosts.join(", ")}.`,
      parameters: {
        type: "object",
        properties: { url: { type: "string" } },
        required: ["url"],
        additionalProperties: false,
      },
    },
    run: async (args, context) => {
      const { url } = HttpFetchSchema.parse(args);
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return `Refused: "${url}" is not a valid URL.`;
      }
      const refused = refusal(parsed, o);
      if (refused) return refused;
      let got: FetchResult;
      try {
        got = await fetchCapped(parsed, { lookup, maxBytes, timeoutMs, signal: context.signal });
      } catch (error) {
        if (error instanceof RefusedAddressError)
          return `Refused: ${error.message} (agent.tools.httpFetchAllowPrivate allows it).`;
        return `Fetch failed: ${error instanceof Error ? error.message : String(error)}.`;
      }
      if (got.status >= 300 && got.status < 400)
        return `HTTP ${got.status}: redirected to ${got.location ?? "?"} (not followed).`;
      const text = got.body.toString("utf8");
      const notes = [
        ...(got.cut === "bytes" ? [`[… cut at ${maxBytes} bytes]`] : []),
        ...(got.cut === "time" ? [`[… stopped after ${timeoutMs / 1000} s]`] : []),
        ...(text.length > MAX_FETCH_CHARS ? [`[… cut at ${MAX_FETCH_CHARS} characters]`] : []),
      ];
      const page = markUntrusted(text.slice(0, MAX_FETCH_CHARS), `web page ${parsed.href}`);
      return [`HTTP ${got.status}`, page, ...notes].join("\n");
    },
  };
}
