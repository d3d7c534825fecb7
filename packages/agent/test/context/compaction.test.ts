import { describe, expect, it } from "vitest";
import {
  COMPACTION_HEADER,
  compactionMessage,
  estimateTokens,
  planCompaction,
  summarize,
} from "../../src/context/compaction.js";
import type { ChatMessage, ModelEvent, ModelProvider, ModelRequest } from "../../src/model.js";

const text = (n: number) => "x".repeat(n);

/** One turn: a user message, `tools` tool round trips, and a final answer. */
function turn(id: string, tools = 0, size = 400): ChatMessage[] {
  const out: ChatMessage[] = [{ role: "user", content: `${id} ${text(size)}` }];
  for (let i = 0; i < tools; i++) {
    const callId = `${id}-call-${i}`;
    out.push({
      role: "assistant",
      content: "",
      toolCalls: [{ id: callId, name: "lookup", arguments: "{}" }],
    });
    out.push({ role: "tool", toolCallId: callId, content: text(size) });
  }
  out.push({ role: "assistant", content: `answer ${id} ${text(size)}` });
  return out;
}

describe("estimateTokens", () => {
  it("counts characters / 4 plus a per-message overhead, including tool calls", () => {
    expect(estimateTokens([])).toBe(0);
    const plain = estimateTokens([{ role: "user", content: text(400) }]);
    expect(plain).toBeGreaterThanOrEqual(100);
    expect(plain).toBeLessThan(110);
    const withCall = estimateTokens([
      { role: "assistant", content: "", toolCalls: [{ id: "c", name: "lookup", arguments: text(400) }] },
    ]);
    expect(withCall).toBeGreaterThanOrEqual(100);
    expect(estimateTokens([{ role: "tool", toolCallId: "c", content: text(400) }])).toBeGreaterThanOrEqual(
      100,
    );
  });
});

describe("planCompaction", () => {
  it("returns undefined while the history fits with the reserve", () => {
    const messages = [...turn("a"), ...turn("b")];
    const tokens = estimateTokens(messages);
    const options = { contextWindow: tokens + 100, reserveTokens: 100, keepRecentTokens: 50 };
    expect(planCompaction(messages, options)).toBeUndefined();
    expect(planCompaction(messages, { ...options, reserveTokens: 101 })).toBeDefined();
  });

  it("keeps the longest tail within keepRecentTokens that starts with a user message", () => {
    const messages = [...turn("a"), ...turn("b"), ...turn("c"), ...turn("d")];
    const turnTokens = estimateTokens(turn("c"));
    const plan = planCompaction(messages, {
      contextWindow: 1000,
      reserveTokens: 200,
      keepRecentTokens: turnTokens * 2 + 10,
    })!;
    expect(plan.kept[0]).toEqual(turn("c")[0]);
    expect(plan.kept).toEqual([...turn("c"), ...turn("d")]);
    expect(plan.older).toEqual([...turn("a"), ...turn("b")]);
  });

  it("keeps the last turn whole when no tail fits the budget", () => {
    const messages = [...turn("a"), ...turn("b", 3)];
    const plan = planCompaction(messages, { contextWindow: 100, reserveTokens: 10, keepRecentTokens: 10 })!;
    expect(plan.kept).toEqual(turn("b", 3));
    expect(plan.older).toEqual(turn("a"));
  });

  it("never separates a tool call from its results", () => {
    // A user message between a tool call and its result (e.g. a group message recorded meanwhile).
    const messages: ChatMessage[] = [
      ...turn("a"),
      { role: "user", content: "b" },
      { role: "assistant", content: "", toolCalls: [{ id: "k", name: "lookup", arguments: "{}" }] },
      { role: "user", content: "interjection" },
      { role: "tool", toolCallId: "k", content: text(40) },
      { role: "assistant", content: "done" },
    ];
    // The budget fits the tail from the interjection on, but a cut there splits call "k" from its result.
    const fromInterjection = estimateTokens(messages.slice(-3));
    expect(estimateTokens(messages.slice(-5))).toBeGreaterThan(fromInterjection);
    const plan = planCompaction(messages, {
      contextWindow: 100,
      reserveTokens: 10,
      keepRecentTokens: fromInterjection,
    })!;
    expect(plan.kept[0]).toEqual({ role: "user", content: "b" });
    expect(plan.older).toEqual(turn("a"));
    for (const part of [plan.older, plan.kept]) {
      const calls = part.flatMap((m) => (m.role === "assistant" ? (m.toolCalls ?? []).map((c) => c.id) : []));
      const results = part.flatMap((m) => (m.role === "tool" ? [m.toolCallId] : []));
      expect(results).toEqual(calls);
    }
  });

  it("starts the tail at a turn boundary even when a tool result would fit on its own", () => {
    const messages = [...turn("a"), ...turn("b", 4)];
    // The last few messages of turn b fit the budget, but a tail must start at a user message.
    const keepRecentTokens = estimateTokens(messages.slice(-3));
    const plan = planCompaction(messages, { contextWindow: 100, reserveTokens: 0, keepRecentTokens })!;
    expect(plan.kept).toEqual(turn("b", 4));
    expect(plan.older).toEqual(turn("a"));
  });

  it("returns undefined when the history is a single turn (nothing to summarize)", () => {
    const plan = planCompaction(turn("a", 5), { contextWindow: 10, reserveTokens: 0, keepRecentTokens: 10 });
    expect(plan).toBeUndefined();
  });

  it("puts leading non-user messages in older", () => {
    const messages: ChatMessage[] = [{ role: "assistant", content: text(400) }, ...turn("a")];
    const plan = planCompaction(messages, { contextWindow: 10, reserveTokens: 0, keepRecentTokens: 10 })!;
    expect(plan.older).toEqual([messages[0]]);
    expect(plan.kept).toEqual(turn("a"));
  });
});

/** A test double of the ModelProvider interface: records requests and streams the given text deltas. */
function scriptedProvider(deltas: string[]): ModelProvider & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    id: "scripted",
    requests,
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      requests.push(request);
      for (const delta of deltas) yield { type: "text", delta };
      yield { type: "done", stopReason: "stop", usage: { inputTokens: 10, outputTokens: 5 } };
    },
  };
}

describe("summarize", () => {
  const older: ChatMessage[] = [
    { role: "user", content: "What's the weather in Paris?" },
    {
      role: "assistant",
      content: "Let me check.",
      toolCalls: [{ id: "w1", name: "weather", arguments: '{"city":"Paris"}' }],
    },
    { role: "tool", toolCallId: "w1", content: `sunny ${text(5000)}` },
    { role: "assistant", content: "It is sunny." },
  ];

  it("calls the model once without tools and returns the collected text", async () => {
    const provider = scriptedProvider(["The user asked ", "about Paris weather; it is sunny.  "]);
    const controller = new AbortController();
    const summary = await summarize(provider, "small-model", older, controller.signal);
    expect(summary).toBe("The user asked about Paris weather; it is sunny.");
    expect(provider.requests).toHaveLength(1);
    const request = provider.requests[0]!;
    expect(request.model).toBe("small-model");
    expect(request.tools).toBeUndefined();
    expect(request.signal).toBe(controller.signal);
    expect(request.messages[0]?.role).toBe("system");
    const transcript = request.messages[1]!;
    expect(transcript.role).toBe("user");
    expect(transcript.content).toContain("user: What's the weather in Paris?");
    expect(transcript.content).toContain("assistant: Let me check.");
    expect(transcript.content).toContain('assistant called weather({"city":"Paris"})');
    expect(transcript.content).toContain("tool result (weather): sunny");
    expect(transcript.content).toContain("assistant: It is sunny.");
    // Tool output is shortened in the transcript.
    expect(transcript.content.length).toBeLessThan(2000);
  });

  it("throws when the model returns no text", async () => {
    await expect(summarize(scriptedProvider([]), "m", older)).rejects.toThrow(/empty summary/);
    await expect(summarize(scriptedProvider([" ", "\n"]), "m", older)).rejects.toThrow(/empty summary/);
  });
});

describe("compactionMessage", () => {
  it("is a user message starting with the summary header", () => {
    const message = compactionMessage("  They talked about Paris.\n");
    expect(message).toEqual({ role: "user", content: `${COMPACTION_HEADER}\nThey talked about Paris.` });
    expect(message.content.startsWith("[Summary of the earlier conversation]")).toBe(true);
  });
});
