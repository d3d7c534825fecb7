// `tsx test/bench/hub-only.ts`: the end-to-end Telegram load against the hub alone, for CPU profiles
// (`node --cpu-prof --cpu-prof-dir=<dir> --import tsx test/bench/hub-only.ts`). Warm-up loads of the
// same shape run first on other chats (`BENCH_WARMUP_ROUNDS`, default 3): with less, the measured load
// still pays for V8 compiling the hub's code (a quarter to a third of its CPU after a 40-message
// warm-up), which a running hub pays once. The measured load's window (monotonic µs, the clock of
// V8's profiles and of `perf record -k CLOCK_MONOTONIC`) is written to `BENCH_WINDOW_FILE` when set,
// so a profile can be cut to it; `BENCH_HEAP_PROFILE_FILE` gets a sampling heap profile of it (what it
// allocates). Prints messages/s and node CPU per message. `BENCH_SIDE=grammy` runs
// the same loads against the bare grammY echo bot instead (its steady state, for comparison).
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { startBenchRedis } from "./meter.js";
import { startBenchGrammy, startBenchHub } from "./telegram.js";
import { driveChats, printLoad } from "./telegram-load.js";

const chats = Number(process.env.BENCH_CHATS ?? 200);
const messages = Number(process.env.BENCH_MESSAGES ?? 5);
const rounds = Number(process.env.BENCH_WARMUP_ROUNDS ?? 3);
const side = process.env.BENCH_SIDE === "grammy" ? "bare grammY echo" : "hub";
const redis = await startBenchRedis();
const bench =
  side === "hub"
    ? await startBenchHub(redis.url, undefined, { agentThread: process.env.BENCH_AGENT_THREAD === "1" })
    : await startBenchGrammy();
try {
  // Each warm-up round on chats of its own: new sessions, as many as in the measured load.
  for (let round = 1; round <= rounds; round++)
    await driveChats(bench.fake, {
      chats,
      messages,
      window: 2,
      timeoutMs: 60_000,
      firstChat: round * 100_000,
    });
  const heapFile = process.env.BENCH_HEAP_PROFILE_FILE;
  const heap = heapFile ? await startHeapSampling() : undefined;
  const from = process.hrtime.bigint() / 1000n;
  const cpu0 = process.cpuUsage();
  const load = await driveChats(bench.fake, { chats, messages, window: 2, timeoutMs: 60_000 });
  const cpu = process.cpuUsage(cpu0);
  if (process.env.BENCH_WINDOW_FILE)
    writeFileSync(process.env.BENCH_WINDOW_FILE, `${from} ${process.hrtime.bigint() / 1000n}`);
  if (heap && heapFile) await stopHeapSampling(heap, heapFile, load.answered);
  printLoad(side, load);
  const perMessage = (us: number) => (us / 1000 / load.answered).toFixed(2);
  console.log(
    `  node CPU per message: ${perMessage(cpu.user + cpu.system)} ms ` +
      `(user ${perMessage(cpu.user)}, system ${perMessage(cpu.system)})`,
  );
} finally {
  await bench.stop();
  await redis.stop();
}
process.exit(0);

// A sampling heap profile that keeps what the collectors freed: what the load allocates, not what
// survives it (`--heap-prof` keeps only the live objects). Open it in Chrome's DevTools (Memory tab).
async function startHeapSampling(): Promise<Session> {
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return session;
}

async function stopHeapSampling(session: Session, file: string, messages: number): Promise<void> {
  const { profile } = await session.post("HeapProfiler.stopSampling");
  session.disconnect();
  writeFileSync(file, JSON.stringify(profile));
  const bytes = totalSize(profile.head);
  console.log(`  allocated per message (sampled): ${(bytes / 1024 / messages).toFixed(1)} KB`);
}

type HeapNode = { selfSize: number; children: HeapNode[] };
function totalSize(node: HeapNode): number {
  return node.children.reduce((sum, child) => sum + totalSize(child), node.selfSize);
}
