import { type AdapterFields, ChannelAccessSchema, finalizeInboundContext } from "@hub/core";
import { describe, expect, it } from "vitest";
import { dispatchDirect, dispatchGroupThread } from "../src/index.js";

const config = { agent: { id: "main", dmScope: "per-channel-peer" as const } };
const dm = (sender: string) =>
  finalizeInboundContext(
    {
      channel: "telegram",
      messageId: "1",
      chat: { type: "direct", id: sender },
      sender: { id: sender },
      body: "hi",
      timestamp: 1,
    },
    config,
  );
const group = (extra: Partial<AdapterFields> = {}) =>
  finalizeInboundContext(
    {
      channel: "telegram",
      messageId: "1",
      chat: { type: "group", id: "g1" },
      sender: { id: "7" },
      body: "hi",
      timestamp: 1,
      ...extra,
    },
    config,
  );

describe("access policy", () => {
  it("direct: allowlist admits listed senders only", () => {
    const access = ChannelAccessSchema.parse({ dmPolicy: "allowlist", allowFrom: ["7"] });
    expect(dispatchGroupThread(dm("7"), access)).toBeUndefined();
    expect(dispatchDirect(dm("7"), access)).toEqual({ kind: "run" });
    expect(dispatchDirect(dm("8"), access).kind).toBe("drop");
  });

  it("direct: open needs the explicit wildcard; disabled drops", () => {
    expect(
      dispatchDirect(dm("8"), ChannelAccessSchema.parse({ dmPolicy: "open", allowFrom: ["*"] })),
    ).toEqual({ kind: "run" });
    expect(dispatchDirect(dm("8"), ChannelAccessSchema.parse({ dmPolicy: "open" })).kind).toBe("drop");
    expect(
      dispatchDirect(dm("8"), ChannelAccessSchema.parse({ dmPolicy: "disabled", allowFrom: ["*"] })).kind,
    ).toBe("drop");
  });

  it("groups: fail closed when not listed; mention required by default; unmentioned is context", () => {
    const none = ChannelAccessSchema.parse({});
    expect(dispatchGroupThread(group({ wasMentioned: true }), none)?.kind).toBe("drop");
    const listed = ChannelAccessSchema.parse({ groups: { g1: {} } });
    expect(dispatchGroupThread(group({ wasMentioned: true }), listed)).toEqual({ kind: "run" });
    expect(dispatchGroupThread(group(), listed)?.kind).toBe("context");
    const noMention = ChannelAccessSchema.parse({ groups: { g1: { requireMention: false } } });
    expect(dispatchGroupThread(group(), noMention)).toEqual({ kind: "run" });
  });

  it("groups: a per-group sender allowlist", () => {
    const access = ChannelAccessSchema.parse({ groups: { g1: { allowFrom: ["9"] } } });
    expect(dispatchGroupThread(group({ wasMentioned: true }), access)?.kind).toBe("drop");
    expect(dispatchGroupThread(group({ wasMentioned: true, sender: { id: "9" } }), access)).toEqual({
      kind: "run",
    });
  });
});
