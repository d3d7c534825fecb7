import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../../../test/fakes/src/index.js";
import { type ChatMessage, ModelError, type ModelEvent, type ModelRequest } from "../src/model.js";
import { OpenAIProvider } from "../src/providers/openai.js";

let fake: FakeOpenAI;
let provider: OpenAIProvider;

beforeEach(async () => {
  fake = await startFakeOpenAI();
  provider = new OpenAIProvider({ id: "fake", baseUrl: fake.url, apiKey: "test-key" });
});

afterEach(async () => {
  await fake.close();
});

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { model: "gpt-test", messages: [{ role: "user", content: "hi" }], ...overrides };
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

describe("OpenAIProvider streaming", () => {
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

  it("assembles a tool call streamed in argument fragments", async () => {
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
    expect(calls[0]?.id).toMatch(/\S/);
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

  it("assembles two parallel tool calls in index order", async () => {
    fake.script({
      toolCalls: [
        { name: "read_file", arguments: '{"path":"/etc/hosts"}', id: "call_a" },
        { name: "list_dir", arguments: '{"path":"/tmp","all":true}', id: "call_b" },
      ],
      chunkSize: 4,
    });
    const calls = toolCalls(await collect(provider.stream(request())));
    expect(calls).toEqual([
      { id: "call_a", name: "read_file", arguments: '{"path":"/etc/hosts"}' },
      { id: "call_b", name: "list_dir", arguments: '{"path":"/tmp","all":true}' },
    ]);
  });

  it("reports usage and requests it", async () => {
    fake.script({ text: "ok", usage: { promptTokens: 42, completionTokens: 7 } });
    const events = await collect(provider.stream(request()));
    expect(events.at(-1)).toEqual({
      type: "done",
      stopReason: "stop",
      usage: { inputTokens: 42, outputTokens: 7 },
    });
    expect(fake.requests[0]?.stream).toBe(true);
    expect(fake.requests[0]?.stream_options).toEqual({ include_usage: true });
  });

  it("maps messages and tools onto the request body", async () => {
    const messages: ChatMessage[] = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: "",
        toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' }],
      },
      { role: "tool", toolCallId: "call_1", content: "18C, sunny" },
      { role: "assistant", content: "18C and sunny." },
      { role: "user", content: "Thanks" },
    ];
    const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    await collect(
      provider.stream(
        request({ messages, tools: [{ name: "get_weather", description: "Current weather", parameters }] }),
      ),
    );
    const body = fake.requests[0];
    expect(body?.model).toBe("gpt-test");
    expect(body?.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "18C, sunny" },
      { role: "assistant", content: "18C and sunny." },
      { role: "user", content: "Thanks" },
    ]);
    expect(body?.tools).toEqual([
      { type: "function", function: { name: "get_weather", description: "Current weather", parameters } },
    ]);
  });

  it("leaves `tools` out when there are none", async () => {
    await collect(provider.stream(request({ tools: [] })));
    expect(fake.requests[0]).not.toHaveProperty("tools");
  });
});

describe("OpenAIProvider errors", () => {
  it("classifies a bad API key as auth", async () => {
    const guarded = await startFakeOpenAI({ apiKey: "right-key" });
    try {
      const wrong = new OpenAIProvider({ baseUrl: guarded.url, apiKey: "wrong-key" });
      const error = await failure(wrong.stream(request()));
      expect(error.kind).toBe("auth");
      expect(error.status).toBe(401);
      // The right key goes through.
      const right = new OpenAIProvider({ baseUrl: guarded.url, apiKey: "right-key" });
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
    { status: 503, kind: "overloaded" },
    { status: 529, kind: "overloaded" },
    { status: 404, kind: "bad_request" },
    { status: 422, kind: "bad_request" },
  ] as const)("classifies HTTP $status as $kind", async ({ status, kind }) => {
    fake.script({ fail: { status, retryAfter: status === 429 ? 3 : undefined } });
    const error = await failure(provider.stream(request()));
    expect(error.kind).toBe(kind);
    expect(error.status).toBe(status);
    expect(error.message).toContain("fake:");
  });

  it("tells a context-length 400 from another 400", async () => {
    fake.script(
      {
        fail: {
          status: 400,
          body: {
            error: {
              message: "This model's maximum context length is 8192 tokens.",
              type: "invalid_request_error",
              code: "context_length_exceeded",
            },
          },
        },
      },
      { fail: { status: 400, body: { error: { message: "Invalid value for 'temperature'." } } } },
    );
    expect((await failure(provider.stream(request()))).kind).toBe("context_overflow");
    expect((await failure(provider.stream(request()))).kind).toBe("bad_request");
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

  it("throws `aborted` at once for an already aborted signal", async () => {
    const error = await failure(provider.stream(request({ signal: AbortSignal.abort() })));
    expect(error.kind).toBe("aborted");
    expect(fake.requests).toHaveLength(0);
  });

  it("fails a stalled stream as `network` after timeoutMs", async () => {
    fake.script({ hang: true });
    const impatient = new OpenAIProvider({ baseUrl: fake.url, apiKey: "k", timeoutMs: 200 });
    const started = Date.now();
    const error = await failure(impatient.stream(request()));
    expect(error.kind).toBe("network");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("fails as `network` when the server is unreachable", async () => {
    await fake.close(); // closing again in afterEach is fine
    const gone = new OpenAIProvider({ baseUrl: fake.url, apiKey: "k" });
    expect((await failure(gone.stream(request()))).kind).toBe("network");
  });
});
