// `tsx test/bench/split-roles.ts`: the end-to-end pairs of `npm run bench` with the hub's agent role in
// a second process (`hub start`, roles ["agent"], on the same Redis and state directory) and ingress and
// delivery in this one: how an operator uses a machine's second core. The bare grammY bot cannot (its
// updates are sequentialized in one process), so this is a figure of its own, beside the one-process
// ratio. Same sizes as `npm run bench` (BENCH_CHATS, BENCH_MESSAGES, BENCH_WINDOW, BENCH_PAIRS).
import { runLayoutPairs } from "./telegram.js";

await runLayoutPairs(
  "end to end, the hub's agent role in a second process (ingress and delivery in the first):",
  "hub (two processes) / bare grammY",
  { agentProcess: true },
);
