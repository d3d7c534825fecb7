// End to end on Telegram: fake Bot API (polling) -> hub -> offline model -> ReplyDispatcher -> fake
// Bot API, and the same load against a bare grammY echo bot (@grammyjs/runner + sequentialize).
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { run, sequentialize } from "@grammyjs/runner";
import { offlineAnswer } from "@hub/agent";
import { createLogger, parseConfig } from "@hub/core";
import { type FakeTelegram, startFakeTelegram } from "@hub/fakes";
import { Bot } from "grammy";
import { startHub } from "../../apps/hub/src/hub.js";
import { channelPlugins } from "../../apps/hub/src/plugins.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";
import { startBenchHubProcess } from "./hub-process.js";
import { benchEnv, type PhaseCost, PhaseMeter, printCost, startBenchRedis } from "./meter.js";
import { driveChats, drivePaced, type LoadResult, type LoadShape, printLoad } from "./telegram-load.js";

/** The figures of one side of the comparison. */
export interface SideResult {
  load: LoadResult;
  cost: PhaseCost;
}

/** A hub for a bench: every guarantee on, its Telegram channel polling a fake, pacing off. */
export interface BenchHub {
  fake: FakeTelegram;
  /** Log lines written so far. */
  logLines(): number;
  /** The CPU (user + system, ms) its agent process has used so far, when it has one. */
  agentCpuMs?(): number;
  /** Whether its agent role runs on a worker thread (`agentThread`). */
  agentThread?: boolean;
  /** The CPU (user + system, ms) its own process has used so far, when it runs in one (`ownProcess`). */
  hubCpuMs?(): number;
  stop(): Promise<void>;
}

/**
 * How many sessions the bench hub runs at once: BENCH_RUNS, default 64. The hub's own default
 * (`agent.maxConcurrentRuns` 8) is sized for real model calls, where a run takes seconds; with the
 * offline model a run takes well under a millisecond, and the bare grammY bot it is compared with
 * works on up to 500 updates at once (@grammyjs/runner's default). `npm run bench` also prints the
 * figures at 8.
 */
export const BENCH_RUNS = Number(process.env.BENCH_RUNS ?? 64);

/** The end-to-end load of `npm run bench`: BENCH_CHATS x BENCH_MESSAGES, BENCH_WINDOW unanswered per chat. */
export function benchShape(): LoadShape {
  return {
    chats: benchEnv("BENCH_CHATS", 200),
    messages: benchEnv("BENCH_MESSAGES", 10),
    window: benchEnv("BENCH_WINDOW", 2),
    timeoutMs: benchEnv("BENCH_TIMEOUT_MS", 120_000),
  };
}

/** How a bench hub is laid out: all in this process, or its agent role in a process of its own. */
export interface BenchHubOptions {
  /**
   * Runs the agent role in a second process (`hub start` with a config file, roles `["agent"]`) beside
   * this one's ingress and delivery, on the same Redis and state directory: how an operator uses a
   * second core. The bare grammY bot it is compared with cannot: its updates are sequentialized in
   * one process.
   */
  agentProcess?: boolean;
  /**
   * Runs the agent role on a worker thread of this process (`agent.threads: 1`): one process, its main
   * thread doing ingress and delivery (and, here, the fake and the load) while the thread runs the turns.
   */
  agentThread?: boolean;
  /**
   * Runs the whole hub in a process of its own (`hub start` with a config file, every role), so that
   * this one holds only the fake Telegram and the load: as in a real installation, the platform's work
   * is not done on the hub's event loop.
   */
  ownProcess?: boolean;
}

/**
 * The directory every bench hub's state directory is made in: the one a parent bench process made
 * (`BENCH_STATE_ROOT`, which its phases' processes inherit), or a new one under BENCH_STATE_DIR (default
 * the OS temp dir), removed when this process exits. Nothing is removed before the whole run ends: on
 * ext4, a file created within a minute after many were deleted near it cost 0.1-0.7 ms of kernel CPU
 * instead of about 25 µs (`perf`: `recently_deleted`, the inode allocator skipping the freed inodes), so
 * one phase's cleanup (thousands of transcripts) made the next phase's new sessions pay for it, where a
 * running hub deletes no transcripts.
 */
export function benchStateRoot(): string {
  const inherited = process.env.BENCH_STATE_ROOT;
  if (inherited) return inherited;
  const root = mkdtempSync(join(process.env.BENCH_STATE_DIR ?? tmpdir(), "hub-bench-"));
  process.env.BENCH_STATE_ROOT = root;
  process.on("exit", () => rmSync(root, { recursive: true, force: true }));
  return root;
}

/** A fresh state directory for one bench hub (see benchStateRoot). */
export function benchStateDir(): string {
  return mkdtempSync(join(benchStateRoot(), "hub-"));
}

/** Starts the hub with every guarantee on, its Telegram channel polling a fresh fake, pacing off. */
export async function startBenchHub(
  redisUrl: string,
  runs = BENCH_RUNS,
  options: BenchHubOptions = {},
): Promise<BenchHub> {
  const fake = await startFakeTelegram();
  const stateDir = benchStateDir();
  const settings = benchHubSettings(fake, redisUrl, runs, options.agentThread ? 1 : 0);
  const release = () => fake.close();
  if (options.ownProcess) {
    const own = await startBenchHubProcess({ ...settings, gateway: { port: 0 } }, stateDir, [
      "ingress",
      "agent",
      "delivery",
    ]).catch(async (error: unknown) => {
      await release();
      throw error;
    });
    // Its channel polls (the in-process hub awaits channelsSettled): no start-up in what is measured.
    const deadline = Date.now() + 30_000;
    while (fake.callsOf("getUpdates").length === 0 && Date.now() < deadline) await sleep(20);
    return {
      fake,
      logLines: own.logLines,
      hubCpuMs: own.cpuMs,
      stop: async () => {
        await own.stop();
        await release();
      },
    };
  }
  let logLines = 0;
  // BENCH_LOG_FILE keeps the lines (e.g. at BENCH_LOG_LEVEL=debug, to trace where a slow message waited).
  const logFile = process.env.BENCH_LOG_FILE;
  const logger = createLogger({
    level: process.env.BENCH_LOG_LEVEL ?? "info",
    destination: {
      write: (line: string) => {
        logLines++;
        if (logFile) appendFileSync(logFile, line);
      },
    },
  });
  const roles = options.agentProcess ? ["ingress", "delivery"] : ["ingress", "agent", "delivery"];
  const config = parseConfig(
    { ...settings, gateway: { port: 0 }, roles },
    "bench config",
    {},
    channelPlugins,
  );
  const agent = options.agentProcess ? await startBenchHubProcess(settings, stateDir, ["agent"]) : undefined;
  // A hub that does not start leaves no agent process behind.
  // An agent thread writes its lines to a file (BENCH_LOG_FILE, where this process's go too, or its own).
  const threadLog = logFile ?? join(stateDir, "agent-thread.log");
  const hub = await startHub(config, {
    stateDir,
    token: "bench-token-0123456789abcdef",
    logger,
    agentThreads: { logFile: threadLog },
  }).catch(async (error: unknown) => {
    await agent?.stop();
    throw error;
  });
  await hub.channelsSettled();
  const threadLines = () =>
    options.agentThread && !logFile && existsSync(threadLog)
      ? readFileSync(threadLog, "utf8").split("\n").length - 1
      : 0;
  return {
    fake,
    logLines: () => logLines + (agent?.logLines() ?? 0) + threadLines(),
    ...(options.agentThread ? { agentThread: true } : {}),
    ...(agent ? { agentCpuMs: agent.cpuMs } : {}),
    stop: async () => {
      try {
        await hub.stop();
      } finally {
        await agent?.stop();
        await release();
      }
    },
  };
}

// The bench hub's configuration (without gateway and roles), as a hub config file would hold it.
function benchHubSettings(
  fake: FakeTelegram,
  redisUrl: string,
  runs: number,
  threads = 0,
): Record<string, unknown> {
  return {
    // Unique per hub (BENCH_REDIS_URL may be a shared Redis), and about as short as an installation's own
    // (`hub` by default): every key of every command carries it.
    redis: { url: redisUrl, prefix: `b${Date.now().toString(36)}` },
    agent: {
      offlineTokenDelayMs: 0,
      queueMode: "followup",
      maxConcurrentRuns: runs,
      threads,
    },
    // Flood limits still taken on every message (the same Redis work), only wide enough that the
    // open-loop phase's 12 or more messages per chat in 5 s are not refused (the default is a burst of 10).
    limits: { senderBurst: 1000, chatBurst: 1000 },
    channels: {
      telegram: fakeTelegramChannel(fake, ["*"]),
    },
  };
}

/**
 * Steady state before a measured load: BENCH_WARMUP_ROUNDS (3) loads of 200 chats × 5 messages on
 * other chats open the connections, load the scripts and let V8 compile the hot paths. Without it a
 * quarter or more of a short run's CPU is V8 compiling (both sides), and the compiles are the tail.
 */
async function warmUp(fake: FakeTelegram): Promise<void> {
  const rounds = Number(process.env.BENCH_WARMUP_ROUNDS ?? 3);
  for (let round = 0; round < rounds; round++)
    await driveChats(fake, {
      chats: 200,
      messages: 5,
      window: 2,
      timeoutMs: 60_000,
      firstChat: 50_000 + round * 1_000,
    });
}

/** The hub with every guarantee on, its Telegram channel polling the fake, pacing off. */
export async function benchHubTelegram(
  redisUrl: string,
  shape: LoadShape,
  runs = BENCH_RUNS,
): Promise<SideResult> {
  const bench = await startBenchHub(redisUrl, runs);
  const meter = new PhaseMeter(redisUrl);
  try {
    await warmUp(bench.fake);
    return await measuredHub(meter, bench, shape, runs);
  } finally {
    meter.close();
    await bench.stop();
  }
}

/** The bare grammY echo bot (`@grammyjs/runner` + `sequentialize`) polling a fresh fake: the baseline. */
export async function startBenchGrammy(): Promise<{ fake: FakeTelegram; stop(): Promise<void> }> {
  const fake = await startFakeTelegram();
  const bot = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } });
  bot.use(sequentialize((ctx) => ctx.chat?.id.toString()));
  bot.on("message:text", (ctx) => ctx.reply(offlineAnswer(ctx.message.text)));
  await bot.init();
  const runner = run(bot);
  return {
    fake,
    stop: async () => {
      await runner.stop();
      await fake.close();
    },
  };
}

/** One side's load and cost in each pair of `benchTelegramPairs`, and the medians. */
export interface PairedResult {
  hub: SideResult[];
  echo: SideResult[];
  /** Each pair's hub ÷ bare grammY messages/s. */
  ratios: number[];
  /** The median of `ratios`. */
  medianRatio: number;
  /** The hub's median messages/s. */
  hubRate: number;
  /** The bare bot's median messages/s. */
  echoRate: number;
}

// A side's messages per second.
const rateOf = (side: SideResult) => side.load.answered / Math.max(side.load.seconds, 1e-9);

// The median (of an even count, the mean of the middle two).
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) return sorted[mid] ?? 0;
  return ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

// Before a measured load: the other side's last load is over (its settles and acks would otherwise be
// charged to this one).
const QUIET_MS = 1_000;

/**
 * The hub (every guarantee on) and the bare grammY echo bot, each on its own fake, both started and
 * warmed up first, then measured in `pairs` pairs, each load on new chats after a second of quiet.
 * The speed of a shared 2-core machine drifts by a third within a minute: one load
 * of each, a minute apart, put the ratio anywhere from 0.32 to 0.50 for the same code. A pair's two
 * loads are seconds apart, and the median of the pairs' ratios is what is reported. The bot goes
 * first in every pair: measured right after the hub in this process, its loads stalled (p50 15 ms
 * but p99 0.9-1 s, 1,900-2,100 messages/s against 2,600-3,200 first), even after 3 s of quiet and a
 * full collection, which flattered the hub's ratio by half (0.52 against 0.30-0.38); the hub
 * measured second was as fast as first. (A full collection before each load left the ratio as it
 * was and only charged the hub's loads for growing the heap again: 1.33-1.46 ms of CPU per message
 * against 1.01-1.37 without.)
 */
export async function benchTelegramPairs(
  redisUrl: string,
  shape: LoadShape,
  pairs: number,
  layout: BenchHubOptions = {},
): Promise<PairedResult> {
  if (!(pairs >= 1)) throw new Error(`BENCH_PAIRS must be 1 or more, not ${pairs}`);
  const bot = await startBenchGrammy();
  const bench = await startBenchHub(redisUrl, BENCH_RUNS, layout);
  const meter = new PhaseMeter(redisUrl);
  const hubs: SideResult[] = [];
  const echoes: SideResult[] = [];
  const ratios: number[] = [];
  try {
    await warmUp(bot.fake);
    await warmUp(bench.fake);
    for (let pair = 1; pair <= pairs; pair++) {
      const chats = { ...shape, firstChat: pair * 1_000_000 };
      console.log(`  pair ${pair} of ${pairs}:`);
      const echo = await measured(meter, bot.fake, chats, "bare grammY echo");
      const hub = await measuredHub(meter, bench, chats, BENCH_RUNS);
      echoes.push(echo);
      hubs.push(hub);
      ratios.push(ratioOf(hub, echo));
      console.log(`  ratio hub / bare grammY: ${ratios.at(-1)?.toFixed(2)}`);
    }
  } finally {
    meter.close();
    await bench.stop();
    await bot.stop();
  }
  return {
    hub: hubs,
    echo: echoes,
    ratios,
    medianRatio: median(ratios),
    hubRate: median(hubs.map(rateOf)),
    echoRate: median(echoes.map(rateOf)),
  };
}

/**
 * A script's whole run of the end-to-end pairs in one layout of the hub (a second process, an agent thread) on
 * a private Redis (or BENCH_REDIS_URL): `title` first, then the pairs, then their ratio as `ratioName`. Exits.
 */
export async function runLayoutPairs(
  title: string,
  ratioName: string,
  layout: BenchHubOptions,
): Promise<never> {
  const redis = await startBenchRedis();
  try {
    console.log(title);
    const pairs = await benchTelegramPairs(redis.url, benchShape(), benchEnv("BENCH_PAIRS", 3), layout);
    printRatios(ratioName, pairs);
  } finally {
    await redis.stop();
  }
  process.exit(0);
}

/** Prints the median messages/s ratio of paired loads, each pair's, and each pair's node CPU per message ratio. */
export function printRatios(name: string, pairs: PairedResult): void {
  const perMessage = (side: SideResult) => side.cost.nodeCpuMs / Math.max(1, side.load.answered);
  const cpu = pairs.hub.map((hub, i) => {
    const echo = pairs.echo[i];
    const times = echo ? perMessage(hub) / perMessage(echo) : Number.NaN;
    return Number.isFinite(times) ? times.toFixed(2) : "-";
  });
  console.log(
    `  ratio ${name}: ${pairs.medianRatio.toFixed(2)} (messages/s, the median of the pairs' ` +
      `${pairs.ratios.map((r) => r.toFixed(2)).join(", ")}); node CPU per message ${cpu.join(", ")}x`,
  );
}

// A side that answered nothing has no rate to compare: NaN, printed as such.
function ratioOf(hub: SideResult, echo: SideResult): number {
  if (hub.load.answered === 0 || echo.load.answered === 0) return Number.NaN;
  return rateOf(hub) / rateOf(echo);
}

// One measured load of the hub, and the log lines it wrote per message.
async function measuredHub(
  meter: PhaseMeter,
  bench: BenchHub,
  shape: LoadShape,
  runs: number,
): Promise<SideResult> {
  const linesBefore = bench.logLines();
  const layout = bench.agentCpuMs
    ? ", agent role in a second process"
    : bench.agentThread
      ? ", agent role on a worker thread"
      : "";
  const name = `hub (maxConcurrentRuns ${runs}${layout})`;
  const hub = await measured(meter, bench.fake, shape, name, bench.agentCpuMs);
  const lines = (bench.logLines() - linesBefore) / Math.max(1, hub.load.answered);
  console.log(`  log lines per message: ${lines.toFixed(2)}`);
  return hub;
}

// One measured load; `otherCpuMs` reads the CPU of another process of the same side (the hub's agent
// process), counted over the same window as this process's and added to the cost.
async function measured(
  meter: PhaseMeter,
  fake: FakeTelegram,
  shape: LoadShape,
  name: string,
  otherCpuMs?: () => number,
): Promise<SideResult> {
  await sleep(QUIET_MS);
  await meter.start();
  const otherBefore = otherCpuMs?.() ?? 0;
  const load = await driveChats(fake, shape);
  const otherMs = (otherCpuMs?.() ?? 0) - otherBefore;
  const cost = await meter.stop();
  printLoad(name, load);
  printCost(cost, load.answered, "message");
  if (!otherCpuMs) return { load, cost };
  // The node CPU printed above is this process's; the ratios count both (the other's from /proc, in 10 ms ticks).
  console.log(
    `  and the agent process: ${(otherMs / Math.max(1, load.answered)).toFixed(2)} ms node CPU per message`,
  );
  return { load, cost: { ...cost, nodeCpuMs: cost.nodeCpuMs + otherMs } };
}

/**
 * Hub-added latency at half of the peak: the hub in a process of its own (this one holds only the fake
 * Telegram and the load, as the platform is not on a real hub's event loop), its peak measured first with
 * the closed-loop load of `shape` unless `rate` is given; then messages arrive at a steady rate (open
 * loop) on new chats. With the offline model and a fake platform that answers at once, pushed -> reply at
 * the fake is what the hub adds.
 */
export async function benchHubPaced(
  redisUrl: string,
  o: { rate?: number; seconds: number; shape: LoadShape },
): Promise<LoadResult> {
  // BENCH_AGENT_THREAD=1: the hub process with its agent role on a worker thread (`agent.threads: 1`).
  const agentThread = process.env.BENCH_AGENT_THREAD === "1";
  const bench = await startBenchHub(redisUrl, BENCH_RUNS, { ownProcess: true, agentThread });
  const hubCpuMs = () => bench.hubCpuMs?.() ?? 0;
  try {
    await warmUp(bench.fake);
    let rate = o.rate;
    const given = rate !== undefined;
    if (rate === undefined) {
      await sleep(QUIET_MS);
      const peak = await driveChats(bench.fake, { ...o.shape, firstChat: 70_000 });
      printLoad("hub in a process of its own, closed loop (its peak)", peak);
      rate = Math.max(10, peak.answered / peak.seconds / 2);
    }
    await sleep(QUIET_MS);
    const cpu0 = hubCpuMs();
    const load = await drivePaced(bench.fake, {
      rate,
      seconds: o.seconds,
      chats: Number(process.env.BENCH_PACED_CHATS ?? 200),
      firstChat: 60_000,
      timeoutMs: 60_000,
    });
    const cpuMs = hubCpuMs() - cpu0;
    printLoad(
      `hub at ${rate.toFixed(0)} messages/s (open loop, ${given ? "BENCH_RATE" : "half its peak"})`,
      load,
    );
    // How near the hub's process is to its limit at this rate: the tail grows as its CPU share nears 100%.
    console.log(
      `  the hub process: ${(cpuMs / Math.max(1, load.answered)).toFixed(2)} ms node CPU per message, ` +
        `${((cpuMs / 1000 / load.seconds) * 100).toFixed(0)}% of a core (its event loop and V8's helper threads)`,
    );
    return load;
  } finally {
    await bench.stop();
  }
}
