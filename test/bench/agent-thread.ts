// `tsx test/bench/agent-thread.ts`: the end-to-end pairs of `npm run bench` with the hub's agent role on a
// worker thread of its process (`agent.threads: 1`): one process, its main thread doing ingress and
// delivery (and here the fake and the load, as in the one-process pairs) while the thread runs the turns.
// Same sizes as `npm run bench` (BENCH_CHATS, BENCH_MESSAGES, BENCH_WINDOW, BENCH_PAIRS).
import { runLayoutPairs } from "./telegram.js";

await runLayoutPairs(
  "end to end, the hub's agent role on a worker thread of its process (agent.threads 1):",
  "hub (agent thread) / bare grammY",
  { agentThread: true },
);
