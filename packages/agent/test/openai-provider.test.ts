import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../../../test/fakes/src/index.js";
import type { ChatMessage } from "../src/model.js";
import { OpenAIProvider } from "../src/providers/openai.js";
import { collect, failure, providerConformance, providerFixture } from "./provider-conformance.js";

const kit = {
  name: "OpenAIProvider",
  model: "gpt-test",
  startFake: startFakeOpenAI,
  create: (options: ConstructorParameters<typeof OpenAIProvider>[0]) => new OpenAIProvider(options),
  toolCallIdPrefix: "call_",
  statusKinds: [
    { status: 401, kind: "auth" },
    { status: 403, kind: "auth" },
    { status: 429, kind: "rate_limit" },
    { status: 500, kind: "overloaded" },
    { status: 503, kind: "overloaded" },
    { status: 529, kind: "overloaded" },
    { status: 404, kind: "bad_request" },
    { status: 422, kind: "bad_request" },
  ],
} as const;
const f = providerFixture(kit);
providerConformance(kit, f);

describe("OpenAIProvider streaming", () => {
  it("reports usage and requests it", async () => {
    f.fake.script({ text: "ok", usage: { promptTokens: 42, completionTokens: 7 } });
    const events = await collect(f.provider.stream(f.request()));
    expect(events.at(-1)).toEqual({
      type: "done",
      stopReason: "stop",
      usage: { inputTokens: 42, outputTokens: 7 },
    });
    expect(f.fake.requests[0]?.stream).toBe(true);
    expect(f.fake.requests[0]?.stream_options).toEqual({ include_usage: true });
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
      f.provider.stream(
        f.request({ messages, tools: [{ name: "get_weather", description: "Current weather", parameters }] }),
      ),
    );
    const body = f.fake.requests[0];
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
    await collect(f.provider.stream(f.request({ tools: [] })));
    expect(f.fake.requests[0]).not.toHaveProperty("tools");
  });
});

describe("OpenAIProvider errors", () => {
  it("tells a context-length 400 from another 400", async () => {
    f.fake.script(
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
    expect((await failure(f.provider.stream(f.request()))).kind).toBe("context_overflow");
    expect((await failure(f.provider.stream(f.request()))).kind).toBe("bad_request");
  });
});

describe("OpenAIProvider and a provider that streams what is no chunk", () => {
  it("says the provider sent no chat completion chunk (its error, as a malformed line is), not a network failure", async () => {
    for (const data of ["null", "42", '{"id":"x"}']) {
      // A server that streams one such event, then the end.
      const server = createServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(`data: ${data}\n\ndata: [DONE]\n\n`);
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
      try {
        const { port } = server.address() as AddressInfo;
        const provider = new OpenAIProvider({
          id: "odd",
          baseUrl: `http://127.0.0.1:${port}/v1`,
          apiKey: "k",
        });
        const error = await failure(provider.stream(f.request()));
        expect([error.kind, error.message]).toEqual([
          "unknown",
          "odd: sent a stream event that is not a chat completion chunk",
        ]);
      } finally {
        await new Promise<void>((r) => server.close(() => r()));
      }
    }
  });
});
