// `npm run bench`: the whole pipeline on Telegram against its baselines, and ordered delivery against
// its baselines, in one run on a private Redis. Prints numbers and ratios; asserts nothing (tests
// assert behaviour). `npm run bench -- all` adds the web chat and Slack figures and the inbound fuzz.
// Sizes: BENCH_CHATS x BENCH_MESSAGES (window BENCH_WINDOW), BENCH_TARGETS x BENCH_SEGMENTS,
// BENCH_THROTTLE_RATE segments/s for BENCH_THROTTLE_SECONDS over BENCH_THROTTLE_TARGETS, BENCH_IDLE_SESSIONS;
// BENCH_PAIRS (3) pairs of end-to-end loads, the bare grammY bot's and the hub's right after it.
import { spawn } from "node:child_process";
import { benchIdleSessions } from "./idle.js";
import { benchEnv as env, startBenchRedis } from "./meter.js";
import {
  BENCH_RUNS,
  benchHubTelegram,
  benchShape,
  benchStateRoot,
  benchTelegramPairs,
  printRatios,
} from "./telegram.js";

const shape = benchShape();
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "-");

/**
 * Runs a phase's own script (beside this one) in a fresh process on the same Redis: a phase run after
 * the end-to-end loads in this process measured their garbage and grown heap too (its p99 and the
 * delivery ratios moved by half between runs), not the phase.
 */
async function runPhase(script: string, env: Record<string, string>): Promise<void> {
  const child = spawn(process.execPath, [...process.execArgv, new URL(script, import.meta.url).pathname], {
    stdio: "inherit",
    env: { ...process.env, ...env },
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`bench phase ${script} exited with ${code}`);
}

// Made before any phase's process starts, so that every phase makes its state there and none removes it.
benchStateRoot();
const redis = await startBenchRedis();
try {
  console.log(
    `end to end: fake Telegram (polling) -> ... -> fake Telegram; ${shape.chats} chats x ${shape.messages} messages, ` +
      `${shape.window} unanswered per chat at most; Redis ${redis.private ? "private" : "shared"}`,
  );
  const pairs = await benchTelegramPairs(redis.url, shape, env("BENCH_PAIRS", 3));
  console.log("  (targets per message: <= 40 Redis commands, <= 8 round trips, <= 1.5 ms node CPU)");
  const { echoRate } = pairs;
  printRatios("hub / bare grammY", pairs);
  if (BENCH_RUNS !== 8) {
    // The hub's default concurrency, for comparison: sized for model calls that take seconds.
    const atDefault = await benchHubTelegram(redis.url, shape, 8);
    console.log(
      `  ratio hub (maxConcurrentRuns 8) / bare grammY (its median, ${echoRate.toFixed(0)} messages/s): ` +
        `${ratio(atDefault.load.answered / atDefault.load.seconds, echoRate)} (messages/s)`,
    );
  }

  // The same pairs with the hub's agent role on a worker thread of its process (`agent.threads: 1`), then
  // in a second process: how an operator uses a second core.
  await runPhase("./agent-thread.ts", { BENCH_REDIS_URL: redis.url });
  await runPhase("./split-roles.ts", { BENCH_REDIS_URL: redis.url });

  console.log("hub-added latency at half of the peak (target: p99 <= 25 ms)");
  // Half of its own peak, measured in that phase's layout (a BENCH_RATE of the shell would skip it).
  await runPhase("./paced-only.ts", { BENCH_REDIS_URL: redis.url, BENCH_RATE: "" });

  await runPhase("./delivery-run.ts", { BENCH_REDIS_URL: redis.url });
  console.log("idle sessions (target at 100,000: hub RSS <= 300 MB, Redis <= 250 MB)");
  await benchIdleSessions(redis.url, env("BENCH_IDLE_SESSIONS", 2000));

  if (process.argv.includes("all")) {
    const { benchWebChat } = await import("./webchat.js");
    const { benchFuzz } = await import("./fuzz.js");
    const { benchSlack } = await import("./slack.js");
    await benchWebChat();
    await benchSlack();
    await benchFuzz();
  }
} finally {
  await redis.stop();
}
process.exit(0);
