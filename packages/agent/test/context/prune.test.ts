import { describe, expect, it } from "vitest";
import { pruneToolResults } from "../../src/context/prune.js";
import type { ChatMessage } from "../../src/model.js";

/** A history of `n` tool round trips; result i has `size(i)` characters. */
function history(n: number, size: (i: number) => number = () => 100): ChatMessage[] {
  const out: ChatMessage[] = [{ role: "user", content: "do things" }];
  for (let i = 0; i < n; i++) {
    out.push({ role: "assistant", content: "", toolCalls: [{ id: `c${i}`, name: "t", arguments: "{}" }] });
    out.push({ role: "tool", toolCallId: `c${i}`, content: String(i % 10).repeat(size(i)) });
  }
  out.push({ role: "assistant", content: "done" });
  return out;
}

function toolResults(messages: ChatMessage[]): Extract<ChatMessage, { role: "tool" }>[] {
  return messages.flatMap((m) => (m.role === "tool" ? [m] : []));
}

describe("pruneToolResults", () => {
  it("replaces all but the most recent results with a marker", () => {
    const input = history(8);
    const results = toolResults(pruneToolResults(input));
    expect(results.slice(0, 2).map((r) => r.content)).toEqual([
      "[tool result pruned: 100 characters]",
      "[tool result pruned: 100 characters]",
    ]);
    expect(results.slice(2).map((r) => r.content)).toEqual(
      toolResults(input)
        .slice(2)
        .map((r) => r.content),
    );
  });

  it("cuts recent results over the character cap with a marker", () => {
    const input = history(2, (i) => (i === 1 ? 5000 : 10));
    const results = toolResults(pruneToolResults(input, { maxCharsPerResult: 2000 }));
    expect(results[0]!.content).toBe("0".repeat(10));
    expect(results[1]!.content).toBe(
      `${"1".repeat(2000)}\n[… tool result truncated: showing 2000 of 5000 characters]`,
    );
  });

  it("honours keepRecentToolResults, including zero", () => {
    const results = toolResults(pruneToolResults(history(3), { keepRecentToolResults: 0 }));
    expect(results.every((r) => r.content === "[tool result pruned: 100 characters]")).toBe(true);
    const kept = toolResults(pruneToolResults(history(3), { keepRecentToolResults: 1 }));
    expect(kept.map((r) => r.content.startsWith("[tool result pruned"))).toEqual([true, true, false]);
  });

  it("leaves results shorter than the marker as they are", () => {
    const results = toolResults(
      pruneToolResults(
        history(3, () => 2),
        { keepRecentToolResults: 0 },
      ),
    );
    expect(results.map((r) => r.content)).toEqual(["00", "11", "22"]);
  });

  it("never mutates the input and returns a new array", () => {
    const input = history(10, (i) => 1000 * (i + 1));
    const before = structuredClone(input);
    const output = pruneToolResults(input, { keepRecentToolResults: 3, maxCharsPerResult: 500 });
    expect(input).toEqual(before);
    expect(output).not.toBe(input);
    expect(output).not.toEqual(input);
  });

  it("keeps every message, so each tool call still has exactly one result", () => {
    const input = history(10, () => 3000);
    const output = pruneToolResults(input, { keepRecentToolResults: 2 });
    expect(output).toHaveLength(input.length);
    expect(output.map((m) => m.role)).toEqual(input.map((m) => m.role));
    const callIds = output.flatMap((m) =>
      m.role === "assistant" ? (m.toolCalls ?? []).map((c) => c.id) : [],
    );
    expect(toolResults(output).map((r) => r.toolCallId)).toEqual(callIds);
  });
});
