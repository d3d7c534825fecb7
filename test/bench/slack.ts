import { performance } from "node:perf_hooks";
import { createLogger } from "@hub/core";
import { SlackAdapter } from "@hub/slack";
import { startFakeSlack } from "../fakes/src/index.js";
import { startTestHub } from "../support/hub.js";
import { freePort } from "../support/hub-process.js";

function pct(sorted: number[], p: number): string {
  if (sorted.length === 0) return "-";
  return (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number).toFixed(1);
}

/**
 * Slack Events API through the whole hub, offline model: signed DM events POSTed to the hub's
 * `/slack/events` by many users at once; how fast Slack gets its 200, and the answer its post.
 */
export async function benchSlack(): Promise<void> {
  const users = Number(process.env.BENCH_SLACK_USERS ?? 100);
  const perUser = Number(process.env.BENCH_SLACK_MESSAGES ?? 3);
  const fake = await startFakeSlack();
  const port = await freePort();
  fake.eventsUrl = `http://127.0.0.1:${port}/slack/events`;
  const values = new Map<string, string>();
  const adapter = new SlackAdapter({
    botToken: fake.botToken,
    signingSecret: fake.signingSecret,
    apiUrl: fake.apiUrl,
    state: { get: async (k) => values.get(k), set: async (k, v) => void values.set(k, v) },
    logger: createLogger({ level: "silent" }),
  });
  const hub = await startTestHub(
    {
      gateway: { port },
      agent: { maxConcurrentRuns: 32 },
      channels: { slack: { dmPolicy: "open", allowFrom: ["*"] } },
    },
    "bench-slack",
    [adapter],
  );
  try {
    const acks: number[] = [];
    const e2e: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: users }, async (_, u) => {
        const channel = `D0BENCH${String(u).padStart(4, "0")}`;
        for (let m = 0; m < perUser; m++) {
          const msg = fake.userMessage(channel, `U0BENCH${u}`, `message ${m} from user ${u}`);
          const envelope = fake.envelope({
            type: "message",
            channel_type: "im",
            channel,
            user: msg.user,
            text: msg.text,
            ts: msg.ts,
          });
          const t0 = performance.now();
          const res = await fake.deliver(envelope);
          acks.push(performance.now() - t0);
          if (res.status !== 200) throw new Error(`event answered ${res.status}`);
          while (fake.posted(channel).length <= m) await new Promise((r) => setTimeout(r, 5));
          e2e.push(performance.now() - t0);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    acks.sort((a, b) => a - b);
    e2e.sort((a, b) => a - b);
    console.log(`slack Events API, offline model, ${users} users x ${perUser} DMs, fake Slack on loopback:`);
    console.log(`  event -> 200 (ack) latency   p50 ${pct(acks, 50)} ms   p99 ${pct(acks, 99)} ms`);
    console.log(`  event -> answer posted       p50 ${pct(e2e, 50)} ms   p99 ${pct(e2e, 99)} ms`);
    console.log(`  throughput                   ${(e2e.length / seconds).toFixed(0)} messages/s`);
  } finally {
    await hub.dispose();
    await fake.close();
  }
}
