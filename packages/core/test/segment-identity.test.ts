import { describe, expect, it } from "vitest";
import { answeredRunOf, segmentIdentityDigest } from "../src/index.js";

describe("segmentIdentityDigest", () => {
  it("is the same for every send of a segment and differs by reply and position", () => {
    const digest = segmentIdentityDigest({ replyId: "reply-1", index: 2 });
    expect(segmentIdentityDigest({ replyId: "reply-1", index: 2 }).equals(digest)).toBe(true);
    expect(segmentIdentityDigest({ replyId: "reply-1", index: 3 }).equals(digest)).toBe(false);
    expect(segmentIdentityDigest({ replyId: "reply-12", index: 2 }).equals(digest)).toBe(false);
  });

  // A resend after an upgrade must carry the key the first send had (Discord's nonce, WhatsApp's id).
  it("keeps the value earlier versions derived idempotency keys from", () => {
    expect(segmentIdentityDigest({ replyId: "reply-1", index: 2 }).toString("hex")).toBe(
      "39cbe1da0baf6a992dae233826e9bf3d780af7cbdbec7286e2b312be1f5d3fb8",
    );
  });
});

describe("answeredRunOf", () => {
  it("is the run for its attempts' replies, and the reply's own id for a notice about it", () => {
    expect(answeredRunOf({ replyId: "run-1" })).toBe("run-1");
    expect(answeredRunOf({ replyId: "run-1", runId: "run-1" })).toBe("run-1");
    expect(answeredRunOf({ replyId: "run-1.2", runId: "run-1" })).toBe("run-1");
    expect(answeredRunOf({ replyId: "run-1.lost", runId: "run-1" })).toBe("run-1.lost");
    expect(answeredRunOf({ replyId: "run-1.2x", runId: "run-1" })).toBe("run-1.2x");
    expect(answeredRunOf({ replyId: "other.2", runId: "run-1" })).toBe("other.2");
  });
});
