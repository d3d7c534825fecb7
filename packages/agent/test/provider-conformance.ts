// One suite for every model provider over its fake API (as Hono runs one suite against every runtime):
// streaming, tool-call assembly, error classification, aborts, stalls and an unreachable server, run by
// anthropic-provider.test.ts and openai-provider.test.ts, each of which adds what is its API's own.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ModelError,
  type ModelErrorKind,
  type ModelEvent,
  type ModelProvider,
  type ModelRequest,
} from "../src/model.js";

/** What the shared cases script on a fake model API (both fakes take these shapes). */
type SharedScript =
  | {
      text?: string;
      chunkSize?: number;
      delayMs?: number;
      toolCalls?: Array<{ name: string; arguments: string; id?: string }>;
    }
  | { fail: { status: number; retryAfter?: number | undefined } }
  | { malformed: true }
  | { hang: true };

/** A fake model API as the suite drives it. */
export interface ScriptableFake {
  readonly url: string;
  readonly requests: readonly unknown[];
  script(...scripts: SharedScript[]): void;
  close(): Promise<void>;
}

/** One provider under the suite: how to start its fake and build it, and what its API answers. */
export interface ProviderKit<F extends ScriptableFake, P extends ModelProvider> {
  name: string;
  model: string;
  startFake(options?: { apiKey?: string }): Promise<F>;
  create(options: { id?: string; baseUrl: string; apiKey: string; timeoutMs?: number }): P;
  /** The id prefix its API gives tool calls (the fake's when the script names none). */
  toolCallIdPrefix: string;
  /** HTTP error statuses and the kind each is classified as. */
  statusKinds: ReadonlyArray<{ status: number; kind: ModelErrorKind }>;
  /** What the error's message says of the fake's scripted failure with `status` (default: the provider id). */
  failureMessage?(status: number): string;
}

/** The fake and provider of the current test (a fresh pair per test), with a request for its model. */
export interface ProviderFixture<F, P> {
  readonly fake: F;
  readonly provider: P;
  request(overrides?: Partial<ModelRequest>): ModelRequest;
}

/** Starts a fake and a provider on it before each test of the file, and closes the fake after. */
export function providerFixture<F extends ScriptableFake, P extends ModelProvider>(
  kit: ProviderKit<F, P>,
): ProviderFixture<F, P> {
  let fake: F | undefined;
  let provider: P | undefined;
  beforeEach(async () => {
    fake = await kit.startFake();
    provider = kit.create({ id: "fake", baseUrl: fake.url, apiKey: "test-key" });
  });
  afterEach(async () => {
    await fake?.close();
  });
  return {
    get fake() {
      if (!fake) throw new Error("no fake outside a test");
      return fake;
    },
    get provider() {
      if (!provider) throw new Error("no provider outside a test");
      return provider;
    },
    request: (overrides = {}) => ({
      model: kit.model,
      messages: [{ role: "user", content: "hi" }],
      ...overrides,
    }),
  };
}

/** Every event of a stream, in order. */
export async function collect(events: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> {
  const out: ModelEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/** Runs the stream to the end and returns the ModelError it must throw. */
export async function failure(events: AsyncIterable<ModelEvent>): Promise<ModelError> {
  try {
    await collect(events);
  } catch (error) {
    if (error instanceof ModelError) return error;
    throw error;
  }
  throw new Error("expected the stream to fail");
}

/** The text deltas of a stream's events. */
export function texts(events: ModelEvent[]): string[] {
  return events.flatMap((e) => (e.type === "text" ? [e.delta] : []));
}

/** The tool calls of a stream's events. */
export function toolCalls(events: ModelEvent[]) {
  return events.flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
}

/** The cases every provider must pass. */
export function providerConformance<F extends ScriptableFake, P extends ModelProvider>(
  kit: ProviderKit<F, P>,
  f: ProviderFixture<F, P>,
): void {
  describe(`${kit.name} (provider conformance): streaming`, () => streamingCases(kit, f));
  describe(`${kit.name} (provider conformance): errors`, () => errorCases(kit, f));
  describe(`${kit.name} (provider conformance): aborts and stalls`, () => abortCases(kit, f));
}

function streamingCases<F extends ScriptableFake, P extends ModelProvider>(
  kit: ProviderKit<F, P>,
  f: ProviderFixture<F, P>,
): void {
  it("streams plain text as several deltas that concatenate right", async () => {
    const text = "Hello there, this is a streamed answer.";
    f.fake.script({ text, chunkSize: 4 });
    const events = await collect(f.provider.stream(f.request()));
    const deltas = texts(events);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join("")).toBe(text);
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "stop" });
  });

  it("yields each delta as it arrives, not at the end", async () => {
    f.fake.script({ text: "one two three", chunkSize: 4, delayMs: 60 });
    const times: Array<{ type: string; at: number }> = [];
    for await (const event of f.provider.stream(f.request()))
      times.push({ type: event.type, at: Date.now() });
    const firstText = times.find((t) => t.type === "text");
    const done = times.at(-1);
    expect(done?.type).toBe("done");
    expect((done?.at ?? 0) - (firstText?.at ?? 0)).toBeGreaterThanOrEqual(150);
  });

  it("answers with the default echo when nothing is scripted", async () => {
    const events = await collect(
      f.provider.stream(f.request({ messages: [{ role: "user", content: "ping" }] })),
    );
    expect(texts(events).join("")).toBe("echo: ping");
  });

  it("assembles a tool call streamed in fragments, after the text and before done", async () => {
    const args = JSON.stringify({ city: "Paris", unit: "celsius", days: [1, 2, 3] });
    f.fake.script({
      text: "Let me check.",
      toolCalls: [{ name: "get_weather", arguments: args }],
      chunkSize: 3,
    });
    const events = await collect(f.provider.stream(f.request()));
    const calls = toolCalls(events);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.name).toBe("get_weather");
    expect(calls[0]?.id.startsWith(kit.toolCallIdPrefix)).toBe(true);
    expect(JSON.parse(calls[0]?.arguments ?? "")).toEqual({
      city: "Paris",
      unit: "celsius",
      days: [1, 2, 3],
    });
    expect(texts(events).join("")).toBe("Let me check.");
    expect(events.map((e) => e.type).slice(-2)).toEqual(["tool_call", "done"]);
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "tool_calls" });
  });

  it("assembles two tool calls in the order the API gave them", async () => {
    const [a, b] = [`${kit.toolCallIdPrefix}a`, `${kit.toolCallIdPrefix}b`];
    f.fake.script({
      toolCalls: [
        { name: "read_file", arguments: '{"path":"/etc/hosts"}', id: a },
        { name: "list_dir", arguments: '{"path":"/tmp","all":true}', id: b },
      ],
      chunkSize: 4,
    });
    expect(toolCalls(await collect(f.provider.stream(f.request())))).toEqual([
      { id: a, name: "read_file", arguments: '{"path":"/etc/hosts"}' },
      { id: b, name: "list_dir", arguments: '{"path":"/tmp","all":true}' },
    ]);
  });
}

function errorCases<F extends ScriptableFake, P extends ModelProvider>(
  kit: ProviderKit<F, P>,
  f: ProviderFixture<F, P>,
): void {
  it("classifies a bad API key as auth, and lets the right key through", async () => {
    const guarded = await kit.startFake({ apiKey: "right-key" });
    try {
      const wrong = kit.create({ baseUrl: guarded.url, apiKey: "wrong-key" });
      const error = await failure(wrong.stream(f.request()));
      expect(error.kind).toBe("auth");
      expect(error.status).toBe(401);
      const right = kit.create({ baseUrl: guarded.url, apiKey: "right-key" });
      expect(texts(await collect(right.stream(f.request()))).join("")).toBe("echo: hi");
    } finally {
      await guarded.close();
    }
  });

  it.each(kit.statusKinds)("classifies HTTP $status as $kind", async ({ status, kind }) => {
    f.fake.script({ fail: { status, retryAfter: status === 429 ? 3 : undefined } });
    const error = await failure(f.provider.stream(f.request()));
    expect(error.kind).toBe(kind);
    expect(error.status).toBe(status);
    expect(error.message).toContain(kit.failureMessage?.(status) ?? "fake:");
  });

  it("throws a ModelError on a malformed stream", async () => {
    f.fake.script({ malformed: true });
    const error = await failure(f.provider.stream(f.request()));
    expect(error.kind).toBe("unknown");
    expect(error.message).toMatch(/malformed/);
  });
}

function abortCases<F extends ScriptableFake, P extends ModelProvider>(
  kit: ProviderKit<F, P>,
  f: ProviderFixture<F, P>,
): void {
  it("throws `aborted` promptly when a hanging call is aborted", async () => {
    f.fake.script({ hang: true });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 100);
    const error = await failure(f.provider.stream(f.request({ signal: controller.signal })));
    expect(error.kind).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("throws `aborted` when aborted in the middle of a stream", async () => {
    f.fake.script({ text: "a slow answer that takes a while", chunkSize: 2, delayMs: 50 });
    const controller = new AbortController();
    const stream = f.provider.stream(f.request({ signal: controller.signal }));
    const error = await failure(
      (async function* () {
        for await (const event of stream) {
          if (event.type === "text") controller.abort();
          yield event;
        }
      })(),
    );
    expect(error.kind).toBe("aborted");
  });

  it("throws `aborted` at once for an already aborted signal", async () => {
    const error = await failure(f.provider.stream(f.request({ signal: AbortSignal.abort() })));
    expect(error.kind).toBe("aborted");
    expect(f.fake.requests).toHaveLength(0);
  });

  it("fails a stalled stream as `network` after timeoutMs", async () => {
    f.fake.script({ hang: true });
    const impatient = kit.create({ baseUrl: f.fake.url, apiKey: "k", timeoutMs: 200 });
    const started = Date.now();
    const error = await failure(impatient.stream(f.request()));
    expect(error.kind).toBe("network");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("fails as `network` when the server is unreachable", async () => {
    await f.fake.close(); // closing again after the test is fine
    const gone = kit.create({ baseUrl: f.fake.url, apiKey: "k" });
    expect((await failure(gone.stream(f.request()))).kind).toBe("network");
  });
}
