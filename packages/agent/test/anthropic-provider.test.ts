import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "../../../test/fakes/src/index.js";
import { type ChatMessage, ModelError, type ModelEvent, type ModelRequest } from "../src/model.js";
import { AnthropicProvider } from "../src/providers/anthropic.js";

let fake: FakeAnthropic;
let provider: AnthropicProvider;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  provider = new AnthropicProvider({ id: "fake", baseUrl: fake.url, apiKey: "test-key" });
});

afterEach(async () => {
  await fake.close();
});

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { model: "claude-test", messages: [{ role: "user", content: "hi" }], ...overrides };
}

async function collect(events: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> {
  const out: ModelEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/** Runs the stream to the end and returns the ModelError it must throw. */
async function failure(events: AsyncIterable<ModelEvent>): Promise<ModelError> {
  try {
    await collect(events);
  } catch (error) {
    if (error instanceof ModelError) return error;
    throw error;
  }
  throw new Error("expected the stream to fail");
}

function texts(events: ModelEvent[]): string[] {
  return events.flatMap((e) => (e.type === "text" ? [e.delta] : []));
}

function toolCalls(events: ModelEvent[]) {
  return events.flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
}

describe("AnthropicProvider streaming", () => {
  it("streams plain text as several deltas that concatenate right", async () => {
    const text = "Hello there, this is a streamed answer.";
    fake.script({ text, chunkSize: 4 });
    const events = await collect(provider.stream(request()));
    const deltas = texts(events);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join("")).toBe(text);
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "stop" });
  });

  it("yields each delta as it arrives, not at the end", async () => {
    fake.script({ text: "one two three", chunkSize: 4, delayMs: 60 });
    const times: Array<{ type: string; at: number }> = [];
    for await (const event of provider.stream(request())) times.push({ type: event.type, at: Date.now() });
    const firstText = times.find((t) => t.type === "text");
    const done = times.at(-1);
    expect(done?.type).toBe("done");
    expect((done?.at ?? 0) - (firstText?.at ?? 0)).toBeGreaterThanOrEqual(150);
  });

  it("answers with the default echo when nothing is scripted", async () => {
    const events = await collect(provider.stream(request({ messages: [{ role: "user", content: "ping" }] })));
    expect(texts(events).join("")).toBe("echo: ping");
  });

  it("assembles a tool call streamed in input_json_delta fragments", async () => {
    const args = JSON.stringify({ city: "Paris", unit: "celsius", days: [1, 2, 3] });
    fake.script({
      text: "Let me check.",
      toolCalls: [{ name: "get_weather", arguments: args }],
      chunkSize: 3,
    });
    const events = await collect(provider.stream(request()));
    const calls = toolCalls(events);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.name).toBe("get_weather");
    expect(calls[0]?.id).toMatch(/^toolu_/);
    expect(JSON.parse(calls[0]?.arguments ?? "")).toEqual({
      city: "Paris",
      unit: "celsius",
      days: [1, 2, 3],
    });
    expect(texts(events).join("")).toBe("Let me check.");
    // Tool calls come after the text and before `done`.
    expect(events.map((e) => e.type).slice(-2)).toEqual(["tool_call", "done"]);
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "tool_calls" });
  });

  it("assembles two tool calls in block order", async () => {
    fake.script({
      toolCalls: [
        { name: "read_file", arguments: '{"path":"/etc/hosts"}', id: "toolu_a" },
        { name: "list_dir", arguments: '{"path":"/tmp","all":true}', id: "toolu_b" },
      ],
      chunkSize: 4,
    });
    const calls = toolCalls(await collect(provider.stream(request())));
    expect(calls).toEqual([
      { id: "toolu_a", name: "read_file", arguments: '{"path":"/etc/hosts"}' },
      { id: "toolu_b", name: "list_dir", arguments: '{"path":"/tmp","all":true}' },
    ]);
  });

  it("gives a no-argument tool call `{}` as arguments", async () => {
    fake.script({ toolCalls: [{ name: "now", arguments: "", id: "toolu_now" }] });
    const calls = toolCalls(await collect(provider.stream(request())));
    expect(calls).toEqual([{ id: "toolu_now", name: "now", arguments: "{}" }]);
  });

  it("reports usage and streams with max_tokens", async () => {
    fake.script({ text: "ok", usage: { inputTokens: 42, outputTokens: 7 } });
    const events = await collect(provider.stream(request()));
    expect(events.at(-1)).toEqual({
      type: "done",
      stopReason: "stop",
      usage: { inputTokens: 42, outputTokens: 7 },
    });
    expect(fake.requests[0]?.stream).toBe(true);
    expect(fake.requests[0]?.max_tokens).toBe(4096);
  });

  it("maps max_tokens to `length`", async () => {
    const limited = new AnthropicProvider({ baseUrl: fake.url, apiKey: "k", maxTokens: 16 });
    fake.script({ text: "cut sh", stopReason: "max_tokens" });
    const events = await collect(limited.stream(request()));
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "length" });
    expect(fake.requests[0]?.max_tokens).toBe(16);
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
      provider.stream(
        request({ messages, tools: [{ name: "get_weather", description: "Current weather", parameters }] }),
      ),
    );
    const body = fake.requests[0];
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
    await collect(provider.stream(request({ messages })));
    expect(fake.requests[0]?.messages.slice(1)).toEqual([
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

  it("leaves `system` and `tools` out when there are none", async () => {
    await collect(provider.stream(request({ tools: [] })));
    expect(fake.requests[0]).not.toHaveProperty("tools");
    expect(fake.requests[0]).not.toHaveProperty("system");
  });
});

describe("AnthropicProvider errors", () => {
  it("classifies a bad API key as auth", async () => {
    const guarded = await startFakeAnthropic({ apiKey: "right-key" });
    try {
      const wrong = new AnthropicProvider({ baseUrl: guarded.url, apiKey: "wrong-key" });
      const error = await failure(wrong.stream(request()));
      expect(error.kind).toBe("auth");
      expect(error.status).toBe(401);
      expect(error.message).toContain("invalid x-api-key");
      // The right key goes through.
      const right = new AnthropicProvider({ baseUrl: guarded.url, apiKey: "right-key" });
      expect(texts(await collect(right.stream(request()))).join("")).toBe("echo: hi");
    } finally {
      await guarded.close();
    }
  });

  it.each([
    { status: 401, kind: "auth" },
    { status: 403, kind: "auth" },
    { status: 429, kind: "rate_limit" },
    { status: 500, kind: "overloaded" },
    { status: 529, kind: "overloaded" },
    { status: 404, kind: "bad_request" },
    { status: 413, kind: "context_overflow" },
  ] as const)("classifies HTTP $status as $kind", async ({ status, kind }) => {
    fake.script({ fail: { status, retryAfter: status === 429 ? 3 : undefined } });
    const error = await failure(provider.stream(request()));
    expect(error.kind).toBe(kind);
    expect(error.status).toBe(status);
    expect(error.message).toContain(`fake: ${status} Scripted failure`);
  });

  it("tells a prompt-too-long 400 from another 400", async () => {
    const invalid = (message: string) => ({
      fail: { status: 400, body: { type: "error", error: { type: "invalid_request_error", message } } },
    });
    fake.script(
      invalid("prompt is too long: 215000 tokens > 200000 maximum"),
      invalid("input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000"),
      invalid("messages: roles must alternate"),
    );
    expect((await failure(provider.stream(request()))).kind).toBe("context_overflow");
    expect((await failure(provider.stream(request()))).kind).toBe("context_overflow");
    expect((await failure(provider.stream(request()))).kind).toBe("bad_request");
  });

  it("classifies an overloaded_error event mid-stream as overloaded", async () => {
    fake.script({ errorEvent: "overloaded_error" });
    const seen: ModelEvent[] = [];
    let caught: unknown;
    try {
      for await (const event of provider.stream(request())) seen.push(event);
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
    fake.script({ errorEvent: "rate_limit_error" });
    expect((await failure(provider.stream(request()))).kind).toBe("rate_limit");
  });

  it("throws a ModelError on a malformed stream", async () => {
    fake.script({ malformed: true });
    const error = await failure(provider.stream(request()));
    expect(error.kind).toBe("unknown");
    expect(error.message).toMatch(/malformed/);
  });

  it("throws `aborted` promptly when a hanging call is aborted", async () => {
    fake.script({ hang: true });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 100);
    const error = await failure(provider.stream(request({ signal: controller.signal })));
    expect(error.kind).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("throws `aborted` when aborted in the middle of a stream", async () => {
    fake.script({ text: "a slow answer that takes a while", chunkSize: 2, delayMs: 50 });
    const controller = new AbortController();
    const error = await failure(
      (async function* () {
        for await (const event of provider.stream(request({ signal: controller.signal }))) {
          if (event.type === "text") controller.abort();
          yield event;
        }
      })(),
    );
    expect(error.kind).toBe("aborted");
  });

  it("throws `aborted` at once for an already aborted signal", async () => {
    const error = await failure(provider.stream(request({ signal: AbortSignal.abort() })));
    expect(error.kind).toBe("aborted");
    expect(fake.requests).toHaveLength(0);
  });

  it("fails a stalled stream as `network` after timeoutMs", async () => {
    fake.script({ hang: true });
    const impatient = new AnthropicProvider({ baseUrl: fake.url, apiKey: "k", timeoutMs: 200 });
    const started = Date.now();
    const error = await failure(impatient.stream(request()));
    expect(error.kind).toBe("network");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("fails as `network` when the server is unreachable", async () => {
    await fake.close(); // closing again in afterEach is fine
    const gone = new AnthropicProvider({ baseUrl: fake.url, apiKey: "k" });
    expect((await failure(gone.stream(request()))).kind).toBe("network");
  });
});
