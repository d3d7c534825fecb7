import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { HubError, redactUrl } from "@hub/core";
import { clusterSeeds, pingRedis } from "@hub/queue";
import { Redis } from "ioredis";

/** A Redis the hub started for its own use; stop it on shutdown. */
export interface LocalRedis {
  /**
   * Stops it, unless other clients still use it (another hub process of this machine found it running
   * and uses it): then it is left running for them, and whoever starts last at the default address uses it.
   */
  stop(): Promise<void>;
}

function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

async function pingError(url: string): Promise<Error | undefined> {
  try {
    await pingRedis(url);
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

/**
 * The sentence for a Redis that answered and refused the password given (WRONGPASS; "ERR invalid password"
 * before Redis 6) or wants one (NOAUTH); undefined for any other error.
 */
export function redisAuthRefusal(error: Error, url: string, setting: string): HubError | undefined {
  const reply = error.message.replace(/\.$/, "");
  const at = `Redis at ${redactUrl(url)}`;
  const form = "redis://:password@host:port, or redis://user:password@host:port for an ACL user";
  if (/^NOAUTH\b/.test(reply))
    return new HubError(
      "redis_password_missing",
      `${at} requires a password and none is set (${reply}); put it in ${setting} as ${form}, and start again.`,
    );
  if (/^WRONGPASS\b|^ERR invalid password/.test(reply))
    return new HubError(
      "redis_password_refused",
      `${at} refused the password (${reply}); set the right one in ${setting} (${form}), and start again.`,
    );
  return undefined;
}

/** Where `ensureRedis` may start a Redis of the hub's own. */
export interface EnsureRedisOptions {
  /**
   * Whether nothing listening at `url` may be answered by starting one: by default only at the default
   * address (`isDefaultRedisAddress`).
   */
  startOwnAt?: (url: URL) => boolean;
}

/**
 * Whether `url` is the default address, a local Redis on port 6379 (any database): the one address where
 * the hub starts a Redis of its own when nothing answers. At any other address a Redis was set on purpose,
 * and one started there would be the wrong one: a typo'd port would put the hub's queues into a Redis
 * nobody else uses (another process of the installation would not see them, and would poll the same bot).
 */
export function isDefaultRedisAddress(url: URL): boolean {
  return isLocal(url) && (url.port === "" || url.port === "6379");
}

const isLocal = (url: URL) => ["127.0.0.1", "localhost", "::1", "[::1]"].includes(url.hostname);

/**
 * Makes sure a Redis answers at `url`. A Redis that refuses the password is
 * a HubError naming `setting` (where the URL was set, e.g. `REDIS_URL`). When
 * nothing listens (connection refused) at the default address, a `redis-server` is
 * started for the hub's own use (AOF on, data in the state dir) if the binary
 * is installed; otherwise a HubError says how to get one. No message shows a
 * password.
 */
export async function ensureRedis(
  url: string,
  stateDir: string,
  log: (line: string) => void,
  setting = "REDIS_URL (or redis.url)",
  options: EnsureRedisOptions = {},
): Promise<LocalRedis | undefined> {
  const error = await pingError(url);
  if (!error) return undefined;
  const refusal = redisAuthRefusal(error, url, setting);
  if (refusal) throw refusal;
  // A Redis Cluster is the operator's to run: the hub starts none.
  if (clusterSeeds(url))
    throw new HubError(
      "redis_unavailable",
      `No Redis Cluster node answers at ${redactUrl(url)} (${error.message}): start the cluster, or fix ${setting}.`,
    );
  const parsed = new URL(url);
  const startOwn = (options.startOwnAt ?? isDefaultRedisAddress)(parsed);
  const nothingListens = (error as NodeJS.ErrnoException).code === "ECONNREFUSED";
  const at = `No Redis answers at ${redactUrl(url)} (${error.message})`;
  // Nothing where a Redis was set on purpose: that Redis is down, or the address is wrong.
  if (nothingListens && !startOwn) {
    const onlyDefault = isLocal(parsed)
      ? " (the hub starts a Redis of its own only at the default address, redis://127.0.0.1:6379)"
      : "";
    throw new HubError(
      "redis_unavailable",
      `${at}: start the Redis you set there, or correct ${setting}${onlyDefault}.`,
    );
  }
  const howTo = `${at}: install and start Redis 7 (e.g. "apt-get install redis-server" or "docker compose up -d redis"), or set ${setting}.`;
  if (!nothingListens || !hasRedisServer()) throw new HubError("redis_unavailable", howTo);
  return startLocalRedis(url, parsed.port || "6379", stateDir, log, howTo);
}

async function startLocalRedis(
  url: string,
  port: string,
  stateDir: string,
  log: (line: string) => void,
  howTo: string,
): Promise<LocalRedis> {
  const dir = join(stateDir, "redis");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const args = ["--port", port, "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--save", ""];
  // Its own process group: a Ctrl-C to the hub's terminal does not stop it under other hub processes.
  const child: ChildProcess = spawn("redis-server", [...args, "--daemonize", "no"], {
    stdio: "ignore",
    detached: true,
  });
  child.on("error", () => {});
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    if (!(await pingError(url))) {
      log(`No Redis was running at ${redactUrl(url)}; started redis-server for the hub (data in ${dir}).`);
      return { stop: () => stopUnlessShared(url, child, log) };
    }
    if (child.exitCode !== null) break;
  }
  child.kill("SIGKILL");
  throw new HubError("redis_unavailable", howTo);
}

// Stops the Redis this process started, unless other clients are connected to it (this process's own
// connections are closed by now): those are other hub processes, which would lose their Redis.
async function stopUnlessShared(
  url: string,
  child: ChildProcess,
  log: (line: string) => void,
): Promise<void> {
  const others = await otherClients(url).catch(() => 0);
  if (others === 0) {
    child.kill("SIGTERM");
    return;
  }
  child.unref();
  log(
    `Left the redis-server started for the hub at ${redactUrl(url)} running: ${others} other client(s) use it (another hub process of this machine).`,
  );
}

// How many clients other than this check's own are connected to the Redis at `url`.
async function otherClients(url: string): Promise<number> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => {});
  try {
    await client.connect();
    const list = String(await client.call("CLIENT", "LIST", "TYPE", "normal"));
    return Math.max(0, list.split("\n").filter((line) => line.trim() !== "").length - 1);
  } finally {
    client.disconnect();
  }
}

/**
 * Where the hub's Redis is set, for a message that asks to fix it: `name` in a sentence (`redis.cluster`
 * when the cluster's seeds are set, else `REDIS_URL` or `redis.url`; with `where`, the variable that is
 * actually set and the configuration file's path), `short` in a hint. The start and every CLI command name
 * it through this one function.
 */
export function redisSetting(
  config: { redis: { cluster?: string[] | undefined } },
  where?: { env: NodeJS.ProcessEnv; path: string },
): { name: string; short: string } {
  if (config.redis.cluster?.length)
    return { name: where ? `redis.cluster in ${where.path}` : "redis.cluster", short: "redis.cluster" };
  if (where?.env.REDIS_URL) return { name: "REDIS_URL", short: "REDIS_URL" };
  return {
    name: where ? `REDIS_URL (or redis.url in ${where.path})` : "REDIS_URL (or redis.url)",
    short: "REDIS_URL / redis.url",
  };
}
