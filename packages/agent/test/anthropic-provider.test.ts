import { describe, expect, it } from "vitest";
import { startFakeAnthropic } from "../../../test/fakes/src/index.js";
import { type ChatMessage, ModelError, type ModelEvent } from "../src/model.js";
import { AnthropicProvider } from "../src/providers/anthropic.js";
import {
  collect,
  failure,
  providerConformance,
  providerFixture,
  texts,
  toolCalls,
} from "./provider-conformance.js";

const kit = {
  name: "AnthropicProvider",
  model: "claude-test",
  startFake: startFakeAnthropic,
  create: (options: ConstructorParameters<typeof AnthropicProvider>[0]) => new AnthropicProvider(options),
  toolCallIdPrefix: "toolu_",
  failureMessage: (status: number) => `fake: ${status} Scripted failure`,
  statusKinds: [
    { status: 401, kind: "auth" },
    { status: 403, kind: "auth" },
    { status: 429, kind: "rate_limit" },
    { status: 500, kind: "overloaded" },
    { status: 529, kind: "overloaded" },
    { status: 404, kind: "bad_request" },
    { status: 413, kind: "context_overflow" },
  ],
} as const;
const f = providerFixture(kit);
providerConformance(kit, f);

describe("AnthropicProvider streaming", () => {
  it("gives a no-argument tool call `{}` as arguments", async () => {
    f.fake.script({ toolCalls: [{ name: "now", arguments: "", id: "toolu_now" }] });
    const calls = toolCalls(await collect(f.provider.stream(f.request())));
    expect(calls).toEqual([{ id: "toolu_now", name: "now", arguments: "{}" }]);
  });

  it("reports usage and streams with max_tokens", async () => {
    f.fake.script({ text: "ok", usage: { inputTokens: 42, outputTokens: 7 } });
    const events = await collect(f.provider.stream(f.request()));
    expect(events.at(-1)).toEqual({
      type: "done",
      stopReason: "stop",
      usage: { inputTokens: 42, outputTokens: 7 },
    });
    expect(f.fake.requests[0]?.stream).toBe(true);
    expect(f.fake.requests[0]?.max_tokens).toBe(4096);
  });

  it("maps max_tokens to `length`", async () => {
    const limited = new AnthropicProvider({ baseUrl: f.fake.url, apiKey: "k", maxTokens: 16 });
    f.fake.script({ text: "cut sh", stopReason: "max_tokens" });
    const events = await collect(limited.stream(f.request()));
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "length" });
    expect(f.fake.requests[0]?.max_tokens).toBe(16);
  });

  it("maps messages and tools onto the request body", async () => {
    const messages: ChatMessage[] = [
      { role: "system", content: "Be brief." },
      { role: "system", content: "Answer in English." },
      { role: "user", content: "Weather in Paris and Rome?" },
      {
        role: "assistant",
        content: "Checking.",
        toolCalls: [
          { id: "toolu_1", name: "get_weather", arguments: '{"city":"Paris"}' },
          { id: "toolu_2", name: "get_weather", arguments: "not json" },
        ],
      },
      { role: "tool", toolCallId: "toolu_1", content: "18C, sunny" },
      { role: "tool", toolCallId: "toolu_2", content: "21C, cloudy" },
      { role: "assistant", content: "Paris 18C," },
      { role: "assistant", content: "Rome 21C." },
      { role: "user", content: "Thanks" },
      { role: "user", content: "Bye" },
    ];
    const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    await collect(
      f.provider.stream(
        f.request({ messages, tools: [{ name: "get_weather", description: "Current weather", parameters }] }),
      ),
    );
    const body = f.fake.requests[0];
    expect(body?.model).toBe("claude-test");
    expect(body?.system).toBe("Be brief.\n\nAnswer in English.");
    expect(body?.messages).toEqual([
      { role: "user", content: "Weather in Paris and Rome?" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking." },
          { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
          { type: "tool_use", id: "toolu_2", name: "get_weather", input: {} },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "18C, sunny" },
          { type: "tool_result", tool_use_id: "toolu_2", content: "21C, cloudy" },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Paris 18C," },
          { type: "text", text: "Rome 21C." },
        ],
      },
      {
        role: "user",
        content: [
          { type: "text", text: "Thanks" },
          { type: "text", text: "Bye" },
        ],
      },
    ]);
    // Roles strictly alternate.
    const roles = body?.messages.map((m) => m.role) ?? [];
    expect(roles.every((role, i) => i === 0 || role !== roles[i - 1])).toBe(true);
    expect(body?.tools).toEqual([
      { name: "get_weather", description: "Current weather", input_schema: parameters },
    ]);
  });

  it("puts tool results before text merged into the same user turn", async () => {
    const messages: ChatMessage[] = [
      { role: "user", content: "Go" },
      { role: "assistant", content: "", toolCalls: [{ id: "toolu_x", name: "run", arguments: "{}" }] },
      { role: "tool", toolCallId: "toolu_x", content: "done" },
      { role: "user", content: "And now?" },
    ];
    await collect(f.provider.stream(f.request({ messages })));
    expect(f.fake.requests[0]?.messages.slice(1)).toEqual([
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_x", name: "run", input: {} }] },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_x", content: "done" },
          { type: "text", text: "And now?" },
        ],
      },
    ]);
  });

  it("marks the system prompt's operator part for the prompt cache, in a block of its own", async () => {
    const stable = "# Identity\n\nThe operator's part.\n\n";
    const messages: ChatMessage[] = [
      { role: "system", content: `${stable}# Channel\n\nA direct chat.\n`, stableChars: stable.length },
      { role: "user", content: "hi" },
      { role: "system", content: "Note: resumed." },
    ];
    await collect(f.provider.stream(f.request({ messages })));
    expect(f.fake.requests[0]?.system).toEqual([
      { type: "text", text: "# Identity\n\nThe operator's part.", cache_control: { type: "ephemeral" } },
      { type: "text", text: "# Channel\n\nA direct chat.\n\n\nNote: resumed." },
    ]);
    // Turned off (`promptCache: false`), or with no stable part said: one plain text, as before.
    const plain = kit.create({ id: "fake", baseUrl: f.fake.url, apiKey: "k", promptCache: false });
    await collect(plain.stream(f.request({ messages })));
    const unsaid = messages.map((m) => (m.role === "system" ? { role: m.role, content: m.content } : m));
    await collect(f.provider.stream(f.request({ messages: unsaid })));
    const joined = `${stable}# Channel\n\nA direct chat.\n\n\nNote: resumed.`;
    expect(f.fake.requests.slice(1).map((r) => r.system)).toEqual([joined, joined]);
  });

  it("counts the prompt's cached tokens as input: read from and written to the cache", async () => {
    const usage = { inputTokens: 12, outputTokens: 3, cacheReadTokens: 1500, cacheCreationTokens: 40 };
    f.fake.script({ text: "ok", usage });
    const events = await collect(f.provider.stream(f.request()));
    expect(events.at(-1)).toMatchObject({ type: "done", usage: { inputTokens: 1552, outputTokens: 3 } });
    // message_delta's counts replace message_start's field by field: one it leaves out keeps its count.
    f.fake.script({ text: "ok", usage, deltaUsage: { inputTokens: 12 } });
    const kept = await collect(f.provider.stream(f.request()));
    expect(kept.at(-1)).toMatchObject({ usage: { inputTokens: 1552 } });
    f.fake.script({ text: "ok", usage, deltaUsage: { inputTokens: 20, cacheReadTokens: 1600 } });
    const moved = await collect(f.provider.stream(f.request()));
    expect(moved.at(-1)).toMatchObject({ usage: { inputTokens: 1660 } });
  });

  it("leaves `system` and `tools` out when there are none", async () => {
    await collect(f.provider.stream(f.request({ tools: [] })));
    expect(f.fake.requests[0]).not.toHaveProperty("tools");
    expect(f.fake.requests[0]).not.toHaveProperty("system");
  });
});

describe("AnthropicProvider errors", () => {
  it("quotes the API's own message for a bad key", async () => {
    const guarded = await startFakeAnthropic({ apiKey: "right-key" });
    try {
      const wrong = new AnthropicProvider({ baseUrl: guarded.url, apiKey: "wrong-key" });
      expect((await failure(wrong.stream(f.request()))).message).toContain("invalid x-api-key");
    } finally {
      await guarded.close();
    }
  });

  it("tells a prompt-too-long 400 from another 400", async () => {
    const invalid = (message: string) => ({
      fail: { status: 400, body: { type: "error", error: { type: "invalid_request_error", message } } },
    });
    f.fake.script(
      invalid("prompt is too long: 215000 tokens > 200000 maximum"),
      invalid("input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000"),
      invalid("messages: roles must alternate"),
    );
    expect((await failure(f.provider.stream(f.request()))).kind).toBe("context_overflow");
    expect((await failure(f.provider.stream(f.request()))).kind).toBe("context_overflow");
    expect((await failure(f.provider.stream(f.request()))).kind).toBe("bad_request");
  });

  it("classifies an overloaded_error event mid-stream as overloaded", async () => {
    f.fake.script({ errorEvent: "overloaded_error" });
    const seen: ModelEvent[] = [];
    let caught: unknown;
    try {
      for await (const event of f.provider.stream(f.request())) seen.push(event);
    } catch (error) {
      caught = error;
    }
    expect(texts(seen).join("")).toBe("partial ");
    expect(caught).toBeInstanceOf(ModelError);
    expect((caught as ModelError).kind).toBe("overloaded");
    expect((caught as ModelError).status).toBeUndefined();
    expect(seen.some((e) => e.type === "done")).toBe(false);
  });

  it("classifies a rate_limit_error event mid-stream as rate_limit", async () => {
    f.fake.script({ errorEvent: "rate_limit_error" });
    expect((await failure(f.provider.stream(f.request()))).kind).toBe("rate_limit");
  });
});
