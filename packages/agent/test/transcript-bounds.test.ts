import { describe, expect, it } from "vitest";
import { keptMessage, MAX_KEPT_ARGUMENT_CHARS } from "../src/transcript-bounds.js";

describe("keptMessage", () => {
  it("keeps an ordinary message as it is", () => {
    const message = {
      role: "assistant" as const,
      content: "hi",
      toolCalls: [{ id: "c1", name: "t", arguments: "{}" }],
    };
    expect(keptMessage(message)).toBe(message);
  });

  it("cuts a model's overlong text and replaces huge tool arguments with valid JSON saying their size", () => {
    const huge = JSON.stringify({ content: "x".repeat(MAX_KEPT_ARGUMENT_CHARS * 2) });
    const kept = keptMessage({
      role: "assistant",
      content: "y".repeat(150_000),
      toolCalls: [
        { id: "c1", name: "memory_write", arguments: huge },
        { id: "c2", name: "current_time", arguments: "{}" },
      ],
    });
    if (kept.role !== "assistant") throw new Error("not an assistant message");
    expect(kept.content).toMatch(/^y{100000}… \[cut: 50,000 more characters not kept\]$/);
    expect(JSON.parse(kept.toolCalls?.[0]?.arguments ?? "")).toEqual({
      cut: `${huge.length} characters of arguments, not kept`,
    });
    expect(kept.toolCalls?.[1]?.arguments).toBe("{}");
  });
});
