import type { ConformanceHarness } from "@hub/conformance";
import { runFuzz } from "@hub/conformance/fuzz";
import { captureLogs, type HubConfigInput } from "@hub/core";
import { discordHarness } from "@hub/discord/conformance";
import { startFakeOpenAI } from "@hub/fakes";
import { webchatHarness } from "@hub/gateway/conformance";
import { slackHarness } from "@hub/slack/conformance";
import { telegramHarness } from "@hub/telegram/conformance";
import { whatsappHarness } from "@hub/whatsapp/conformance";
import { startTestHub } from "../support/hub.js";
import { waitFor } from "../support/redis.js";

const COUNT = Number(process.env.BENCH_FUZZ ?? 10_000);
// Another seed explores other mutations (the default one is what earlier runs were measured with).
const SEED = Number(process.env.BENCH_FUZZ_SEED ?? 424242);

/** Every installed adapter's harness, as the conformance suite runs them. */
const HARNESSES: Array<[string, () => ConformanceHarness]> = [
  ["telegram (polling)", () => telegramHarness()],
  ["telegram (webhook)", () => telegramHarness({ webhook: true })],
  ["slack (Events API)", () => slackHarness({ mode: "http" })],
  ["slack (Socket Mode)", () => slackHarness({ mode: "socket" })],
  ["discord (gateway MESSAGE_CREATE)", () => discordHarness()],
  ["webchat (chat.send)", () => webchatHarness()],
  ["whatsapp (messages.upsert)", () => whatsappHarness()],
];

const UNCAUGHT = /TypeError|ReferenceError|Cannot read properties|uncaught|unhandled|"level":60/i;

async function fuzzOne(name: string, h: ConformanceHarness): Promise<void> {
  const { logger, lines } = captureLogs("warn");
  const model = await startFakeOpenAI();
  const adapter = await h.start({ logger });
  const hub = await startTestHub(
    {
      ...h.hubConfig?.(),
      agent: { model: "fake/m" },
      models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
      channels: {
        [h.channel]: { dmPolicy: "allowlist", allowFrom: [h.ids.user] },
      } as HubConfigInput["channels"],
    },
    `bench-fuzz-${h.channel}`,
    adapter ? [adapter] : [],
    logger,
  );
  await h.attach?.({ port: hub.port, token: hub.token });
  try {
    if (!h.raw) return void console.log(`  ${name}: no raw payloads in its harness; skipped`);
    const report = await runFuzz(h.raw, { count: COUNT, seed: SEED });
    model.script({ text: "still here" });
    const started = performance.now();
    await h.direct("after the fuzz");
    await waitFor(() => h.outbound(h.ids.directChat).length >= 1, "an answer after the fuzz", 300_000);
    const drained = (performance.now() - started + report.ms) / 1000;
    const statuses = Object.entries(report.statuses)
      .map(([status, n]) => `${status}:${n}`)
      .join(" ");
    console.log(
      `  ${name}: ${report.delivered} mutated payloads in ${drained.toFixed(1)} s (${(report.delivered / drained).toFixed(0)}/s through the hub), ` +
        `5xx ${report.serverErrors}${statuses ? ` (${statuses})` : ""}, uncaught errors in the log ${lines.filter((l) => UNCAUGHT.test(l)).length}, next message answered`,
    );
  } finally {
    await hub.dispose();
    await h.stop();
    await model.close();
  }
}

/** `npm run bench`: seeded fuzz of every adapter's inbound edge (10,000 mutated payloads each). */
export async function benchFuzz(): Promise<void> {
  console.log(`inbound fuzz, ${COUNT} seeded mutated payloads per adapter:`);
  for (const [name, make] of HARNESSES) await fuzzOne(name, make());
}
