import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "@hub/core";
import { FileSessionStore } from "@hub/sessions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/src/index.js";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub, type TestHub } from "../support/hub.js";

let hub: TestHub;
let model: FakeOpenAI;
let client: GatewayClient;
beforeAll(async () => {
  model = await startFakeOpenAI();
  hub = await startTestHub(
    {
      agent: { model: "fake/m", contextWindowTokens: 6000 },
      models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
    },
    "context",
  );
  const workspace = join(hub.stateDir, "workspace");
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, "AGENTS.md"), `Be kind.\n${"a".repeat(25_000)}`);
  writeFileSync(join(workspace, "MEMORY.md"), "m".repeat(3000));
  client = await GatewayClient.open(hub.port, hub.token);
});
afterAll(async () => {
  client.close();
  await hub.dispose();
  await model.close();
});

let n = 0;
async function turn(sessionKey: string, text: string): Promise<void> {
  const runId = `ctx-${n++}-${Date.now()}`;
  await client.request("chat.send", { sessionKey, text, idempotencyKey: runId });
  expect((await client.terminal(runId)).state).toBe("final");
}
const store = () => new FileSessionStore(hub.stateDir, createLogger({ level: "silent" }));
const systemOf = (i: number) => (model.requests[i]!.messages[0] as { content: string }).content;

describe("context building", () => {
  it("gives workspace files to the model, cut at 20,000 characters with a visible marker", async () => {
    await turn("agent:main:webchat:direct:boot", "hello");
    const system = systemOf(model.requests.length - 1);
    expect(system).toContain("Be kind.");
    expect(system).toContain("[… truncated: showing 20000 of 25009 characters of AGENTS.md]");
  });

  it("prunes old tool results in what the model sees, never in the transcript", async () => {
    const s = "agent:main:webchat:direct:prune";
    const reads = Array.from({ length: 8 }, (_, i) => ({
      name: "memory_read",
      arguments: JSON.stringify({ i }),
    }));
    model.script({ toolCalls: reads }, { text: "read it all" });
    await turn(s, "read your memory eight times");
    await turn(s, "and now?");
    const toolContents = (model.requests.at(-1)!.messages as Array<{ role: string; content: string }>)
      .filter((m) => m.role === "tool")
      .map((m) => m.content);
    expect(toolContents).toHaveLength(8);
    expect(toolContents.slice(0, 2)).toEqual([
      "[tool result pruned: 3000 characters]",
      "[tool result pruned: 3000 characters]",
    ]);
    expect(
      toolContents.slice(2).every((c) => c.startsWith("m".repeat(2000)) && c.includes("truncated")),
    ).toBe(true);
    const session = (await store().get(s))!;
    const onDisk = (await store().read(session.sessionId)).filter((e) => e.type === "tool_result");
    expect(onDisk.map((e) => (e.type === "tool_result" ? e.content.length : 0))).toEqual(Array(8).fill(3000));
  });

  it("compacts older turns into a summary entry near the context window; the kept tail starts at a user turn", async () => {
    rmSync(join(hub.stateDir, "workspace", "AGENTS.md"));
    const s = "agent:main:webchat:direct:compact";
    const before = model.requests.length;
    for (let i = 0; i < 6; i++) await turn(s, `question ${i} ${"q".repeat(1500)}`);
    const calls = model.requests.slice(before);
    const isSummary = (r: (typeof calls)[number]) =>
      (r.messages[0] as { content: string }).content.startsWith("You summ");
    const first = calls.findIndex(isSummary);
    expect(first).toBeGreaterThan(0);
    expect(JSON.stringify(calls[first]!.messages)).toContain("question 0");
    expect(calls[first]!.tools).toBeUndefined();
    const sent = calls[first + 1]!.messages as Array<{ role: string; content: string }>;
    expect(sent[1]!.content.startsWith("[Summary of the earlier conversation]\n")).toBe(true);
    expect(JSON.stringify(sent.slice(2))).not.toContain("question 0");
    expect(sent[2]!.role).toBe("user");
    const session = (await store().get(s))!;
    const entries = await store().read(session.sessionId);
    const compactions = entries.filter((e) => e.type === "compaction");
    expect(compactions.length).toBeGreaterThan(0);
    for (const c of compactions) expect(entries[(c as { keepFrom: number }).keepFrom]?.type).toBe("user");
    // The transcript keeps every turn on disk.
    expect(entries.filter((e) => e.type === "user")).toHaveLength(6);
    // Later runs start from the latest summary too.
    expect((calls.at(-1)!.messages[1] as { content: string }).content).toMatch(
      /^\[Summary of the earlier conversation\]/,
    );
  });
});
