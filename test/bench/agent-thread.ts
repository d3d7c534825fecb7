// `tsx test/bench/agent-thread.ts`: the end-to-end pairs of `npm run bench` with the hub's agent role on a
// worker thread of its process (`agent.threads: 1`): one process, its main thread doing ingress and
// delivery (and here the fake and the load, as in the one-process pairs) while the thread runs the turns.
// Same sizes as `npm run bench` (BENCH_CHATS, BENCH_MESSAGES, BENCH_WINDOW, BENCH_PAIRS).
import { benchEnv, startBenchRedis } from "./meter.js";
import { benchShape, benchTelegramPairs, printRatios } from "./telegram.js";

const redis = await startBenchRedis();
try {
  console.log("end to end, the hub's agent role on a worker thread of its process (agent.threads 1):");
  const pairs = await benchTelegramPairs(redis.url, benchShape(), benchEnv("BENCH_PAIRS", 3), {
    agentThread: true,
  });
  printRatios("hub (agent thread) / bare grammY", pairs);
} finally {
  await redis.stop();
}
process.exit(0);
