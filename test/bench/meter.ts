// Measurement for the benchmarks: a private Redis (so INFO commandstats counts only us), Redis
// commands and CPU per phase, client round trips, node CPU and peak RSS.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { performance } from "node:perf_hooks";
import { Pipeline, Redis } from "ioredis";

/** A Redis for one bench run: a private `redis-server` on a free port, or `BENCH_REDIS_URL`. */
export interface BenchRedis {
  url: string;
  /** True when the counts include only this run (a private server). */
  private: boolean;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject()));
    });
  });
}

/** Starts a private redis-server (no persistence) unless `BENCH_REDIS_URL` names one. */
export async function startBenchRedis(): Promise<BenchRedis> {
  const given = process.env.BENCH_REDIS_URL;
  if (given) return { url: given, private: false, stop: async () => {} };
  const port = await freePort();
  let child: ChildProcess;
  try {
    child = spawn("redis-server", ["--port", String(port), "--save", "", "--appendonly", "no"], {
      stdio: "ignore",
    });
  } catch {
    return { url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", private: false, stop: async () => {} };
  }
  const url = `redis://127.0.0.1:${port}`;
  const failed = new Promise<boolean>((r) => child.once("error", () => r(false)));
  const ready = (async () => {
    for (let i = 0; i < 100; i++) {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => {});
      const ok = await probe.connect().then(
        () => true,
        () => false,
      );
      probe.disconnect();
      if (ok) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  })();
  const spawned = await Promise.race([ready, failed]);
  if (!spawned) {
    console.log("  (redis-server not found: using REDIS_URL; Redis counts include other clients)");
    return { url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", private: false, stop: async () => {} };
  }
  return {
    url,
    private: true,
    stop: async () => {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    },
  };
}

// Round trips as the client sees them: a command sent on its own is one, a pipeline (or MULTI) is one.
let singleCommands = 0;
let pipelines = 0;
let patched = false;
function countRoundTrips(): void {
  if (patched) return;
  patched = true;
  const send = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis["sendCommand"]>) {
    if (args[1] === undefined) singleCommands++;
    return send.apply(this, args);
  };
  const exec = Pipeline.prototype.exec;
  Pipeline.prototype.exec = function (this: Pipeline, ...args: Parameters<Pipeline["exec"]>) {
    pipelines++;
    return exec.apply(this, args);
  };
}

/** What one phase cost. */
export interface PhaseCost {
  seconds: number;
  /** Commands Redis executed, including those called inside Lua scripts (INFO commandstats). */
  redisCommands: number;
  /** Round trips the clients in this process made (single commands + pipelines/transactions). */
  roundTrips: number;
  /** Redis CPU (user + sys) in ms. */
  redisCpuMs: number;
  /** This process's CPU in ms. */
  nodeCpuMs: number;
  /** Peak RSS of this process during the phase, in MB. */
  peakRssMb: number;
  /** The commands that made up most of `redisCommands`, most first. */
  topCommands: Array<[string, number]>;
}

async function redisSnapshot(redis: Redis): Promise<{ calls: Map<string, number>; cpuMs: number }> {
  const [stats, cpu] = await Promise.all([redis.info("commandstats"), redis.info("cpu")]);
  const calls = new Map<string, number>();
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1] ?? "", Number(m[2]));
  const num = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(cpu)?.[1] ?? 0);
  return { calls, cpuMs: (num("used_cpu_user") + num("used_cpu_sys")) * 1000 };
}

/** Measures one phase: call `start()` before the load and `stop()` after it. */
export class PhaseMeter {
  readonly #redis: Redis;
  #before: Awaited<ReturnType<typeof redisSnapshot>> | undefined;
  #t0 = 0;
  #cpu0: NodeJS.CpuUsage | undefined;
  #rt0 = 0;
  #peak = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(redisUrl: string) {
    countRoundTrips();
    this.#redis = new Redis(redisUrl);
  }

  async start(): Promise<void> {
    this.#before = await redisSnapshot(this.#redis);
    this.#peak = process.memoryUsage().rss;
    this.#timer = setInterval(() => {
      this.#peak = Math.max(this.#peak, process.memoryUsage().rss);
    }, 50);
    this.#rt0 = singleCommands + pipelines;
    this.#cpu0 = process.cpuUsage();
    this.#t0 = performance.now();
  }

  async stop(): Promise<PhaseCost> {
    const seconds = (performance.now() - this.#t0) / 1000;
    const cpu = process.cpuUsage(this.#cpu0);
    const roundTrips = singleCommands + pipelines - this.#rt0;
    clearInterval(this.#timer);
    const after = await redisSnapshot(this.#redis);
    const before = this.#before ?? after;
    const deltas: Array<[string, number]> = [];
    for (const [name, calls] of after.calls) {
      // The two INFO calls of the snapshot itself are not the phase's.
      const d = calls - (before.calls.get(name) ?? 0) - (name === "info" ? 2 : 0);
      if (d > 0) deltas.push([name, d]);
    }
    deltas.sort((a, b) => b[1] - a[1]);
    return {
      seconds,
      redisCommands: deltas.reduce((n, [, d]) => n + d, 0),
      roundTrips,
      redisCpuMs: after.cpuMs - before.cpuMs,
      nodeCpuMs: (cpu.user + cpu.system) / 1000,
      peakRssMb: Math.max(this.#peak, process.memoryUsage().rss) / 1024 / 1024,
      topCommands: deltas.slice(0, 8),
    };
  }

  close(): void {
    this.#redis.disconnect();
  }
}

/** A number from the environment (a bench size or rate), or `fallback`. */
export function benchEnv(name: string, fallback: number): number {
  return Number(process.env[name] ?? fallback);
}

/** The p-th percentile of sorted numbers, formatted. */
export function pct(sorted: number[], p: number): string {
  if (sorted.length === 0) return "-";
  return (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number).toFixed(1);
}

/** Prints a phase's cost per unit (message, job, segment). */
export function printCost(cost: PhaseCost, units: number, unit: string): void {
  const per = (n: number) => (units > 0 ? (n / units).toFixed(2) : "-");
  console.log(
    `  per ${unit}: ${per(cost.redisCommands)} Redis commands (incl. inside Lua), ${per(cost.roundTrips)} round trips, ` +
      `${per(cost.nodeCpuMs)} ms node CPU, ${per(cost.redisCpuMs)} ms Redis CPU; peak RSS ${cost.peakRssMb.toFixed(0)} MB`,
  );
  console.log(`  top commands: ${cost.topCommands.map(([c, n]) => `${c} ${per(n)}`).join(", ")}`);
}
