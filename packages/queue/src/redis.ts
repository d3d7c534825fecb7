import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { redisUrlsOf } from "@hub/core";
import { Cluster, Command, Redis } from "ioredis";
import { sendWritesPerTurn } from "./turn-writes.js";

/** Our Redis client type (ioredis). */
export type RedisClient = Redis;

/** Connection options of `createRedis`. */
export interface CreateRedisOptions {
  /** Connect on the first command rather than at once. */
  lazy?: boolean;
  /** Retries of one command before it fails (default null: wait out a Redis restart). */
  maxRetriesPerRequest?: number | null;
  connectTimeoutMs?: number;
}

/**
 * The seed nodes of a Redis Cluster, or undefined for a single Redis: a
 * comma-separated list of `redis://` URLs (`redis.url`, `REDIS_URL`, or the
 * list `redis.cluster` gives) is a cluster.
 */
export function clusterSeeds(url: string): string[] | undefined {
  return url.includes(",") ? redisUrlsOf(url) : undefined;
}

// Where the connection errors of every client `createRedis` opens go (see `onRedisConnectionError`).
let connectionErrors: (error: Error) => void = () => {};

/**
 * Tells `report` the connection errors of every Redis client opened from now on or before (the hub
 * logs them, rate-limited). Without a listener, ioredis prints a stack trace per client per retry:
 * dozens a second while Redis is down. The clients retry by themselves either way.
 */
export function onRedisConnectionError(report: (error: Error) => void): void {
  connectionErrors = report;
}

/**
 * Opens a Redis connection (an ioredis `Cluster` when `url` lists cluster
 * seeds; typed as `Redis`, whose commands it shares: every multi-key command
 * and script of the hub touches keys of one hash slot). `maxRetriesPerRequest:
 * null` by default because a command should wait out a Redis restart rather
 * than fail a run. ioredis's auto-pipelining is off: commands are pipelined on
 * the connection either way (none waits for the reply of another), each turn's
 * writes leave in one system call (`sendWritesPerTurn`), and its per-turn
 * Pipeline objects cost more than that. Measured under
 * the bench's load: the hub answered 5-15% more messages per second without it,
 * and its collector promoted a third less short-lived garbage into the old
 * generation (a plain evalsha loop: 1.7x the commands per second, 0.14 MB
 * promoted per scavenge instead of 2.3 MB).
 */
export function createRedis(url: string, options: CreateRedisOptions = {}): Redis {
  const client = openRedis(url, options);
  client.on("error", (error: Error) => connectionErrors(error));
  sendWritesPerTurn(client);
  return client;
}

function openRedis(url: string, options: CreateRedisOptions): Redis {
  const common = {
    maxRetriesPerRequest: options.maxRetriesPerRequest === undefined ? null : options.maxRetriesPerRequest,
    ...(options.connectTimeoutMs ? { connectTimeout: options.connectTimeoutMs } : {}),
  };
  const seeds = clusterSeeds(url);
  if (!seeds)
    return new Redis(url, { ...common, lazyConnect: options.lazy ?? false, enableAutoPipelining: false });
  const first = new URL(seeds[0] ?? "redis://127.0.0.1:6379");
  const cluster = new Cluster(seeds, {
    lazyConnect: options.lazy ?? false,
    enableAutoPipelining: false,
    redisOptions: {
      ...common,
      ...(first.username ? { username: decodeURIComponent(first.username) } : {}),
      ...(first.password ? { password: decodeURIComponent(first.password) } : {}),
      ...(first.protocol === "rediss:" ? { tls: {} } : {}),
    },
  });
  // Same commands, one more routing layer: every caller keeps the `Redis` type.
  return cluster as unknown as Redis;
}

/** Whether a connection from `createRedis` is a cluster client. */
export function isCluster(redis: Redis): boolean {
  return (redis as unknown) instanceof Cluster;
}

/** How many times a connection was ready again after a reconnect (see `readyCount`). */
export interface ReadyCount {
  readonly count: number;
}

// One counter per connection, however many users read it.
const readyCounts = new WeakMap<Redis, ReadyCount>();

/**
 * Counts each time the connection is ready (again) from now on: after a reconnect, whatever it was a restart,
 * a restored backup or a failover. What a process keeps of Redis's state compares the count with the one it
 * kept that state under. On a cluster, also each time it drops or adds a node: a node connection that drops
 * is not reconnected but dropped (`-node`) and opened again when next used (`+node`), and a replica promoted
 * is a node added; the cluster's own `ready` comes only once.
 */
export function readyCount(redis: Redis): ReadyCount {
  const known = readyCounts.get(redis);
  if (known) return known;
  const counter = { count: 0 };
  const count = () => {
    counter.count++;
  };
  redis.on("ready", count);
  if (isCluster(redis)) {
    const cluster = redis as unknown as Cluster;
    cluster.on("+node", count);
    cluster.on("-node", count);
  }
  readyCounts.set(redis, counter);
  return counter;
}

/**
 * Every key matching `pattern` (SCAN), on a single Redis or on every master
 * of a cluster (SCAN walks one node only).
 */
export async function scanKeys(redis: Redis, pattern: string, count = 500): Promise<string[]> {
  const nodes = isCluster(redis) ? (redis as unknown as Cluster).nodes("master") : [redis];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", count);
      cursor = next;
      found.push(...keys);
    } while (cursor !== "0");
  }
  return found;
}

/**
 * Resolves when Redis answers PING within `timeoutMs`, or rejects with the
 * connection's own error when it had one (`ECONNREFUSED`, or Redis's
 * `WRONGPASS` / `NOAUTH` reply) rather than ioredis's "Connection is closed".
 */
export async function pingRedis(url: string, timeoutMs = 1500): Promise<void> {
  const client = new Redis(clusterSeeds(url)?.[0] ?? url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    retryStrategy: () => null,
  });
  let cause: Error | undefined;
  client.on("error", (error: Error) => {
    cause ??= error;
  });
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw cause ?? error;
  } finally {
    client.disconnect();
  }
}

const shas = new Map<string, string>();
// Per connection, the SCRIPT LOAD under way for each script: see `runScript`.
const loading = new WeakMap<Redis, Map<string, Promise<unknown>>>();

/**
 * Runs a Lua script by its SHA (EVALSHA), loading it on first use or after a
 * Redis restart (NOSCRIPT), so hot paths do not resend the script text. The
 * calls that meet NOSCRIPT together (a restarted Redis under load: every call in
 * flight) wait for one SCRIPT LOAD on their connection instead of each sending
 * the whole text with EVAL. A cluster's nodes each keep their own scripts, so
 * there the key's node is given the text (EVAL).
 */
export async function runScript(
  redis: Redis,
  script: string,
  keys: Array<string>,
  args: Array<string | number>,
): Promise<unknown> {
  let sha = shas.get(script);
  if (!sha) {
    sha = createHash("sha1").update(script).digest("hex");
    shas.set(script, sha);
  }
  const bySha = () => evalsha(redis, sha, keys, args);
  try {
    return await bySha();
  } catch (error) {
    if (!isNoScript(error)) throw error;
  }
  if (!isCluster(redis)) {
    await sharedLoad(redis, sha, script);
    try {
      return await bySha();
    } catch (error) {
      // Flushed again in between (another restart): the text itself, as a last resort.
      if (!isNoScript(error)) throw error;
    }
  }
  return redis.eval(script, keys.length, ...keys, ...args);
}

/**
 * EVALSHA as `redis.evalsha(sha, n, ...keys, ...args)` sends it, with the command's arguments given as one
 * new array: ioredis copies a command's arguments with `Array.prototype.flat` (nested arrays allowed), which
 * for a script's 20-40 arguments cost about 2.4 µs per call (2.4% of the hub's main thread in the bench's
 * CPU profile, for 7 scripts per message). The hub's connections have no `keyPrefix` (which the Command's
 * constructor would apply to the keys).
 */
function evalsha(redis: Redis, sha: string, keys: string[], args: Array<string | number>): Promise<unknown> {
  // Its constructor turns numbers into strings: these arguments come after it, so as strings.
  const command = new EvalshaCommand("evalsha", [], { replyEncoding: "utf8" });
  const list: string[] = [sha, String(keys.length)];
  for (const key of keys) list.push(key);
  for (const arg of args) list.push(typeof arg === "string" ? arg : String(arg));
  command.args = list;
  return redis.sendCommand(command) as Promise<unknown>;
}

/**
 * EVALSHA written as one Buffer: ioredis builds a command's wire form by string concatenation, a cons
 * string per argument that the socket's write then flattens (two bytes per character once any argument
 * holds a character past Latin-1) and copies again into a Buffer.
 */
class EvalshaCommand extends Command {
  override toWritable(): Buffer {
    const args = this.args as string[];
    let size = 16 + Buffer.byteLength(this.name);
    const lengths: number[] = [];
    for (const arg of args) {
      const length = Buffer.byteLength(arg);
      lengths.push(length);
      size += length + 16;
    }
    const out = Buffer.allocUnsafe(size);
    let at = out.write(`*${args.length + 1}\r\n$${this.name.length}\r\n${this.name}\r\n`, 0, "latin1");
    for (let i = 0; i < args.length; i++) {
      at += out.write(`$${lengths[i]}\r\n`, at, "latin1");
      at += out.write(args[i] as string, at, "utf8");
      at += out.write("\r\n", at, "latin1");
    }
    return out.subarray(0, at);
  }
}

const isNoScript = (error: unknown) => error instanceof Error && error.message.startsWith("NOSCRIPT");

// One SCRIPT LOAD per connection and script at a time; a later NOSCRIPT (the next restart) loads again.
function sharedLoad(redis: Redis, sha: string, script: string): Promise<unknown> {
  let loads = loading.get(redis);
  if (!loads) {
    loads = new Map();
    loading.set(redis, loads);
  }
  const known = loads.get(sha);
  if (known) return known;
  const load = redis.script("LOAD", script).finally(() => loads.delete(sha));
  loads.set(sha, load);
  return load;
}

/** Reads a Lua script kept in its own file (one script per file, header naming KEYS, ARGV and result). */
export function loadScript(url: URL): string {
  return readFileSync(fileURLToPath(url), "utf8");
}

/**
 * A script behind shared Lua functions of the mailbox's commands: `take_token` (commands/token-bucket.lua),
 * `owe_drain` (commands/owe-drain.lua) and `ack_next` (commands/ack-next.lua), in the order given.
 */
export function scriptWith(
  url: URL,
  ...functions: Array<"token-bucket" | "push-items" | "owe-drain" | "ack-next">
): string {
  const shared = functions.map((name) => loadScript(new URL(`./commands/${name}.lua`, import.meta.url)));
  return [...shared, loadScript(url)].join("\n");
}

/** A script that takes flood-limit tokens: the shared `take_token` Lua function (commands/token-bucket.lua), then the script. */
export function tokenBucketScript(url: URL): string {
  return scriptWith(url, "token-bucket");
}
