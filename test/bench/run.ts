// `pnpm bench`: figures for the web chat path with the offline model, and for
// ordered delivery. Prints numbers; asserts nothing (tests assert behaviour).
import { performance } from "node:perf_hooks";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub } from "../support/hub.js";
import { benchDelivery } from "./delivery.js";
import { benchFuzz } from "./fuzz.js";
import { benchSlack } from "./slack.js";

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 200);
const PER_CLIENT = Number(process.env.BENCH_MESSAGES ?? 5);

function pct(sorted: number[], p: number): string {
  if (sorted.length === 0) return "-";
  return (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number).toFixed(1);
}

async function benchWebChat(): Promise<void> {
  const hub = await startTestHub(
    { agent: { maxConcurrentRuns: Number(process.env.BENCH_RUNS ?? 32) } },
    "bench",
  );
  try {
    const clients = await Promise.all(
      Array.from({ length: CLIENTS }, () => GatewayClient.open(hub.port, hub.token)),
    );
    const acks: number[] = [];
    const e2e: number[] = [];
    const started = performance.now();
    await Promise.all(
      clients.map(async (client, c) => {
        for (let m = 0; m < PER_CLIENT; m++) {
          const runId = `bench-${c}-${m}-${Date.now()}`;
          const t0 = performance.now();
          const res = await client.request("chat.send", {
            sessionKey: `agent:main:webchat:direct:bench${c}`,
            text: `message ${m} from client ${c}`,
            idempotencyKey: runId,
          });
          acks.push(performance.now() - t0);
          if (!res.ok) throw new Error(JSON.stringify(res.error));
          const end = await client.terminal(runId, 120_000);
          if (end.state !== "final") throw new Error(`run ${runId} ended ${end.state}: ${end.text}`);
          e2e.push(performance.now() - t0);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    acks.sort((a, b) => a - b);
    e2e.sort((a, b) => a - b);
    console.log(
      `web chat, offline model, ${CLIENTS} concurrent clients x ${PER_CLIENT} messages (one session each):`,
    );
    console.log(`  chat.send ACK latency   p50 ${pct(acks, 50)} ms   p99 ${pct(acks, 99)} ms`);
    console.log(`  send -> final latency   p50 ${pct(e2e, 50)} ms   p99 ${pct(e2e, 99)} ms`);
    console.log(
      `  end-to-end throughput   ${(e2e.length / seconds).toFixed(0)} messages/s (${e2e.length} in ${seconds.toFixed(1)} s)`,
    );
    for (const c of clients) c.close();
  } finally {
    await hub.dispose();
  }
}

await benchWebChat();
await benchDelivery();
await benchSlack();
await benchFuzz();
process.exit(0);
