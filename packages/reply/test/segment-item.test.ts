import { describe, expect, it } from "vitest";
import { parseSegmentItem, SegmentItemSchema } from "../src/segment-item.js";

const target = { channel: "telegram", accountId: "default", chatId: "42" };
const good = [
  { replyId: "r", index: 0, text: "hi", target },
  {
    replyId: "r",
    index: 3,
    text: "",
    target: { ...target, threadId: "7" },
    at: 1,
    runId: "x",
    sessionKey: "s",
  },
  { replyId: "r", index: 0, text: "p", target, preview: "pv", kind: "preview" },
  { replyId: "r", index: 0, text: "", target, preview: "pv", kind: "close" },
  {
    replyId: "r",
    index: 1,
    text: "caption",
    target,
    attachment: {
      ref: "abc-123e4567-e89b-12d3-a456-426614174000",
      filename: "a.png",
      mime: "image/png",
      kind: "image",
      size: 3,
    },
  },
];
const bad: unknown[] = [
  null,
  [],
  "text",
  { replyId: "r", index: -1, text: "hi", target },
  { replyId: "r", index: 1.5, text: "hi", target },
  { replyId: "r", index: 0, text: 5, target },
  { replyId: "r", index: 0, text: "hi", target, extra: 1 },
  { replyId: "r", index: 0, text: "hi", target: { ...target, chatId: "" } },
  { replyId: "r", index: 0, text: "hi", target: { ...target, extra: "1" } },
  { replyId: "r", index: 0, text: "hi", target: { channel: "t", accountId: "a" } },
  { replyId: "r", index: 0, text: "hi", target, kind: "other" },
  { replyId: "r", index: 0, text: "hi", target, at: "now" },
  { replyId: "r", index: 0, text: "hi", target, attachment: { ref: "nope" } },
  { index: 0, text: "hi", target },
];

describe("parseSegmentItem", () => {
  it("accepts exactly what the schema accepts, with the same data", () => {
    for (const item of good) {
      const raw = JSON.parse(JSON.stringify(item)) as unknown;
      expect(parseSegmentItem(raw)).toEqual(SegmentItemSchema.parse(raw));
    }
    for (const item of bad) {
      expect(SegmentItemSchema.safeParse(item).success).toBe(false);
      expect(() => parseSegmentItem(item)).toThrow();
    }
  });
});
