// `tsx test/bench/hub-only.ts`: the end-to-end Telegram load against the hub alone, for CPU profiles
// (`node --cpu-prof --cpu-prof-dir=<dir> --import tsx test/bench/hub-only.ts`). A warm-up load runs
// first; the measured load's window (monotonic µs, the clock of V8's profiles) is written to
// `BENCH_WINDOW_FILE` when set, so a profile can be cut to it. Prints messages/s and node CPU per message.
import { writeFileSync } from "node:fs";
import { startBenchRedis } from "./meter.js";
import { startBenchHub } from "./telegram.js";
import { driveChats, printLoad } from "./telegram-load.js";

const chats = Number(process.env.BENCH_CHATS ?? 200);
const messages = Number(process.env.BENCH_MESSAGES ?? 5);
const redis = await startBenchRedis();
const bench = await startBenchHub(redis.url);
try {
  await driveChats(bench.fake, { chats: 20, messages: 2, window: 1, timeoutMs: 30_000, firstChat: 90_000 });
  const from = process.hrtime.bigint() / 1000n;
  const cpu0 = process.cpuUsage();
  const load = await driveChats(bench.fake, { chats, messages, window: 2, timeoutMs: 60_000 });
  const cpu = process.cpuUsage(cpu0);
  if (process.env.BENCH_WINDOW_FILE)
    writeFileSync(process.env.BENCH_WINDOW_FILE, `${from} ${process.hrtime.bigint() / 1000n}`);
  printLoad("hub", load);
  console.log(`  node CPU per message: ${((cpu.user + cpu.system) / 1000 / load.answered).toFixed(2)} ms`);
} finally {
  await bench.stop();
  await redis.stop();
}
process.exit(0);
