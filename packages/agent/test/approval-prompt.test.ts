import { describe, expect, it } from "vitest";
import { approvalPrompt } from "../src/approval-prompt.js";

describe("approvalPrompt", () => {
  it("shows the arguments as given, in a code block their backticks cannot close, with the answer to give", () => {
    const text = approvalPrompt("send_file", { content: "```**x**```" }, "ABC123", 60);
    expect(text).toBe(
      [
        "Approve running `send_file` with these arguments?",
        "````json",
        '{"content":"```**x**```"}',
        "````",
        "Reply /approve ABC123 or /deny ABC123 (within 60 s).",
      ].join("\n"),
    );
  });

  it("cuts long arguments, counting what it left out: one short message, not eight", () => {
    const text = approvalPrompt("send_file", { content: "`**x**`\n".repeat(3000) }, "ABC123", 60);
    expect(text.length).toBeLessThan(800);
    expect(text).toMatch(/… \([\d,]+ more characters\)\n```\n/);
  });
});
