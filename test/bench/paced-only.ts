// `tsx test/bench/paced-only.ts`: the hub-added latency phase of `npm run bench` alone, for tracing its
// tail. The hub runs in a process of its own (`hub start` with a config file); after BENCH_WARMUP_ROUNDS
// (3) warm-up loads of 200 chats × 5 messages (so V8 has compiled the hot paths), its peak is measured
// with the closed-loop load of `npm run bench` (BENCH_CHATS × BENCH_MESSAGES), then messages arrive at
// half of it (or BENCH_RATE messages/s when set) for BENCH_PACED_SECONDS (5), round-robin over
// BENCH_PACED_CHATS (200) new chats (2,000 spreads each chat's first message, which creates its session,
// over the whole load).
// BENCH_TRACE_FILE: every answered message's sent time, chat, number and latency, as JSON lines (which
// messages make the tail: e.g. each chat's first, which creates its session).
import { writeFileSync } from "node:fs";
import { benchEnv as env, startBenchRedis } from "./meter.js";
import { benchHubPaced, benchShape } from "./telegram.js";

const redis = await startBenchRedis();
try {
  const load = await benchHubPaced(redis.url, {
    ...(process.env.BENCH_RATE ? { rate: env("BENCH_RATE", 0) } : {}),
    seconds: env("BENCH_PACED_SECONDS", 5),
    shape: benchShape(),
  });
  const trace = process.env.BENCH_TRACE_FILE;
  // BENCH_WINDOW_FILE: the load's start and end in monotonic µs (the clock of V8's CPU profiles).
  if (process.env.BENCH_WINDOW_FILE) {
    const origin = process.hrtime.bigint() / 1000n - BigInt(Math.round(performance.now() * 1000));
    const from = origin + BigInt(Math.round((load.startedAt ?? 0) * 1000));
    writeFileSync(process.env.BENCH_WINDOW_FILE, `${from} ${from + BigInt(Math.round(load.seconds * 1e6))}`);
  }
  if (trace) writeFileSync(trace, (load.samples ?? []).map((s) => `${JSON.stringify(s)}\n`).join(""));
} finally {
  await redis.stop();
}
process.exit(0);
