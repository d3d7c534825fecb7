// `tsx test/bench/paced-only.ts`: the hub-added latency phase of `npm run bench` alone, for tracing its
// tail. BENCH_RATE messages/s (default 200) for BENCH_PACED_SECONDS (5) after BENCH_WARMUP_ROUNDS (3)
// warm-up loads of 200 chats × 5 messages, so V8 has compiled the hot paths before the measured window.
import { startBenchRedis } from "./meter.js";
import { benchHubPaced } from "./telegram.js";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const redis = await startBenchRedis();
try {
  await benchHubPaced(redis.url, env("BENCH_RATE", 200), env("BENCH_PACED_SECONDS", 5));
} finally {
  await redis.stop();
}
process.exit(0);
