// End to end on Telegram: fake Bot API (polling) -> hub -> offline model -> ReplyDispatcher -> fake
// Bot API, and the same load against a bare grammY echo bot (@grammyjs/runner + sequentialize).
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run, sequentialize } from "@grammyjs/runner";
import { offlineAnswer } from "@hub/agent";
import { createLogger, parseConfig } from "@hub/core";
import { type FakeTelegram, startFakeTelegram } from "@hub/fakes";
import { Bot } from "grammy";
import { startHub } from "../../apps/hub/src/hub.js";
import { channelPlugins } from "../../apps/hub/src/plugins.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";
import { type PhaseCost, PhaseMeter, printCost } from "./meter.js";
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

/** Starts the hub with every guarantee on, its Telegram channel polling a fresh fake, pacing off. */
export async function startBenchHub(redisUrl: string, runs = BENCH_RUNS): Promise<BenchHub> {
  const fake = await startFakeTelegram();
  // BENCH_STATE_DIR: where the state directory is made (default the OS temp dir).
  const stateDir = mkdtempSync(join(process.env.BENCH_STATE_DIR ?? tmpdir(), "hub-bench-"));
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
  const config = parseConfig(
    {
      gateway: { port: 0 },
      // Unique per hub (BENCH_REDIS_URL may be a shared Redis), and about as short as an installation's own
      // (`hub` by default): every key of every command carries it.
      redis: { url: redisUrl, prefix: `b${Date.now().toString(36)}` },
      agent: {
        offlineTokenDelayMs: 0,
        queueMode: "followup",
        maxConcurrentRuns: runs,
      },
      // Flood limits still taken on every message (the same Redis work), only wide enough that the
      // open-loop phase's 12 or more messages per chat in 5 s are not refused (the default is a burst of 10).
      limits: { senderBurst: 1000, chatBurst: 1000 },
      channels: {
        telegram: fakeTelegramChannel(fake, ["*"]),
      },
    },
    "bench config",
    {},
    channelPlugins,
  );
  const hub = await startHub(config, { stateDir, token: "bench-token-0123456789abcdef", logger });
  await hub.channelsSettled();
  return {
    fake,
    logLines: () => logLines,
    stop: async () => {
      await hub.stop();
      await fake.close();
      rmSync(stateDir, { recursive: true, force: true });
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
    await meter.start();
    const linesBefore = bench.logLines();
    const load = await driveChats(bench.fake, shape);
    const cost = await meter.stop();
    printLoad(`hub (maxConcurrentRuns ${runs})`, load);
    printCost(cost, load.answered, "message");
    console.log(
      `  log lines per message: ${((bench.logLines() - linesBefore) / Math.max(1, load.answered)).toFixed(2)}`,
    );
    return { load, cost };
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

/** A bare grammY echo bot on the same fake and load: the baseline. */
export async function benchGrammyEcho(redisUrl: string, shape: LoadShape): Promise<SideResult> {
  const bot = await startBenchGrammy();
  const meter = new PhaseMeter(redisUrl);
  try {
    await warmUp(bot.fake);
    await meter.start();
    const load = await driveChats(bot.fake, shape);
    const cost = await meter.stop();
    printLoad("bare grammY echo", load);
    printCost(cost, load.answered, "message");
    return { load, cost };
  } finally {
    meter.close();
    await bot.stop();
  }
}

/**
 * Hub-added latency at half of the peak the closed-loop load reached: messages arrive at a steady
 * `rate` (open loop) on new chats; with the offline model and a fake platform that answers at once,
 * pushed -> reply at the fake is what the hub adds.
 */
export async function benchHubPaced(redisUrl: string, rate: number, seconds: number): Promise<LoadResult> {
  const bench = await startBenchHub(redisUrl);
  try {
    await warmUp(bench.fake);
    const load = await drivePaced(bench.fake, {
      rate,
      seconds,
      chats: 200,
      firstChat: 60_000,
      timeoutMs: 60_000,
    });
    printLoad(`hub at ${rate.toFixed(0)} messages/s (open loop)`, load);
    return load;
  } finally {
    await bench.stop();
  }
}
