import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "./hub-process.js";

/** A redis-server of a test's own, on its own port and data directory. */
export interface OwnRedis {
  port: number;
  url: string;
  /** SIGKILL (no shutdown save), then start again on the same port and directory (AOF reloaded). */
  restart(options?: { downMs?: number }): Promise<void>;
  /** SIGKILL, leaving the data directory (and its AOF) for `up`. */
  down(): Promise<void>;
  /** Starts again on the same port and directory (AOF reloaded) after `down`. */
  up(): Promise<void>;
  /** Copies its data as it is now (the AOF), as an operator's backup would. */
  backUp(): void;
  /** SIGKILL, the data replaced by the last `backUp`'s, then started again: Redis restored from a backup. */
  restoreBackup(): Promise<void>;
  stop(): Promise<void>;
}

async function ping(port: number, password?: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis({
      port,
      ...(password ? { password } : {}),
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    } finally {
      client.disconnect();
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

function spawnServer(port: number, dir: string, extra: string[]): ChildProcess {
  const child = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--save",
      "",
      "--daemonize",
      "no",
      ...extra,
    ],
    { stdio: "ignore" },
  );
  child.on("error", () => {});
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

/** Whether `redis-server` is installed (the tests that start their own need it). */
export function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

/**
 * Starts a redis-server with AOF on (`appendfsync always`, so a kill loses nothing acknowledged);
 * with `password`, it refuses clients that do not give it (`requirepass`).
 */
export async function startOwnRedis(options: { password?: string } = {}): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "hub-redis-"));
  const args = ["--appendonly", "yes", "--appendfsync", "always"];
  if (options.password) args.push("--requirepass", options.password);
  let child = spawnServer(port, dir, args);
  await ping(port, options.password);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async restart({ downMs = 500 } = {}) {
      await kill(child);
      await new Promise((r) => setTimeout(r, downMs));
      child = spawnServer(port, dir, args);
      await ping(port, options.password);
    },
    async down() {
      await kill(child);
    },
    async up() {
      child = spawnServer(port, dir, args);
      await ping(port, options.password);
    },
    backUp() {
      // appendfsync always: every acknowledged write is in the files copied.
      rmSync(`${dir}.backup`, { recursive: true, force: true });
      cpSync(join(dir, "appendonlydir"), `${dir}.backup`, { recursive: true });
    },
    async restoreBackup() {
      await kill(child);
      rmSync(join(dir, "appendonlydir"), { recursive: true, force: true });
      cpSync(`${dir}.backup`, join(dir, "appendonlydir"), { recursive: true });
      child = spawnServer(port, dir, args);
      await ping(port, options.password);
    },
    async stop() {
      await kill(child);
      rmSync(dir, { recursive: true, force: true });
      rmSync(`${dir}.backup`, { recursive: true, force: true });
    },
  };
}

/** A local Redis Cluster of three masters (no replicas), for the cluster tests. */
export interface OwnRedisCluster {
  ports: number[];
  /** The seed list as `redis.url` / `REDIS_URL` takes it (comma-separated: a cluster). */
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts three `redis-server --cluster-enabled yes` on free ports and joins them
 * with `redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes`;
 * resolves once every node reports `cluster_state:ok`.
 */
export async function startRedisCluster(): Promise<OwnRedisCluster> {
  const ports = [await freePort(), await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), "hub-cluster-"));
  const children = ports.map((port) =>
    spawnServer(port, dir, [
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      `nodes-${port}.conf`,
      "--cluster-node-timeout",
      "2000",
      "--appendonly",
      "no",
    ]),
  );
  const stop = async () => {
    for (const child of children) await kill(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) await ping(port);
    const created = spawnSync(
      "redis-cli",
      [
        "--cluster",
        "create",
        ...ports.map((p) => `127.0.0.1:${p}`),
        "--cluster-replicas",
        "0",
        "--cluster-yes",
      ],
      { encoding: "utf8", timeout: 30_000 },
    );
    if (created.status !== 0)
      throw new Error(`redis-cli --cluster create failed:\n${created.stdout}${created.stderr}`);
    await clusterReady(ports);
  } catch (error) {
    await stop();
    throw error;
  }
  return { ports, url: ports.map((p) => `redis://127.0.0.1:${p}`).join(","), stop };
}

async function clusterReady(ports: number[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (const port of ports) {
    const client = new Redis({ port });
    try {
      while (!String(await client.cluster("INFO")).includes("cluster_state:ok")) {
        if (Date.now() > deadline) throw new Error(`cluster node ${port} never reported cluster_state:ok`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      client.disconnect();
    }
  }
}
