import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { HubError } from "@hub/core";
import { clusterSeeds, pingRedis } from "@hub/queue";

/** A Redis the hub started for its own use; stop it on shutdown. */
export interface LocalRedis {
  stop(): void;
}

function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

/**
 * Makes sure a Redis answers at `url`. If none does and the URL is local, a
 * `redis-server` is started for the hub's own use (AOF on, data in the state
 * dir) when the binary is installed; otherwise a HubError says how to get one.
 */
export async function ensureRedis(
  url: string,
  stateDir: string,
  log: (line: string) => void,
): Promise<LocalRedis | undefined> {
  try {
    await pingRedis(url);
    return undefined;
  } catch {
    // fall through: no Redis answers
  }
  // A Redis Cluster is the operator's to run: the hub starts none.
  if (clusterSeeds(url))
    throw new HubError(
      "redis_unavailable",
      `No Redis Cluster node answers at ${url}: start the cluster, or fix redis.cluster / REDIS_URL.`,
    );
  const parsed = new URL(url);
  const local = ["127.0.0.1", "localhost", "::1", "[::1]"].includes(parsed.hostname);
  const howTo = `No Redis answers at ${url}: install and start Redis 7 (e.g. "apt-get install redis-server" or "docker compose up -d redis"), or set REDIS_URL.`;
  if (!local || !hasRedisServer()) throw new HubError("redis_unavailable", howTo);
  const dir = join(stateDir, "redis");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const port = parsed.port || "6379";
  const child: ChildProcess = spawn(
    "redis-server",
    [
      "--port",
      port,
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--appendonly",
      "yes",
      "--save",
      "",
      "--daemonize",
      "no",
    ],
    { stdio: "ignore" },
  );
  log(`No Redis was running at ${url}; started redis-server for the hub (data in ${dir}).`);
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      await pingRedis(url);
      return { stop: () => child.kill("SIGTERM") };
    } catch {
      if (child.exitCode !== null) break;
    }
  }
  child.kill("SIGKILL");
  throw new HubError("redis_unavailable", howTo);
}
