import { describe, expect, it } from "vitest";
import { type AdapterFields, type InboundResult, InboundSequencer, isUrgentCommand } from "../src/index.js";

const msg = (chat: string, body: string): AdapterFields => ({
  channel: "examplechat",
  messageId: `${chat}-${body}`,
  chat: { type: "direct", id: chat },
  sender: { id: chat },
  body,
  timestamp: 0,
});

describe("inbound ordering", () => {
  it("knows /stop (with a bot suffix) as urgent and nothing else", () => {
    expect(["/stop", "/STOP now", "/stop@my_bot", " /stop"].map(isUrgentCommand)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(["/stopper", "stop", "/new", "please /stop"].map(isUrgentCommand)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });

  it("admits one chat in order, other chats in parallel, and /stop without waiting", async () => {
    const sequencer = new InboundSequencer();
    const log: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const handle = async (f: AdapterFields): Promise<InboundResult> => {
      if (f.body === "slow") await gate;
      log.push(`${f.chat.id}:${f.body}`);
      return { kind: "accepted" };
    };
    const done = [
      sequencer.submit(msg("a", "slow"), handle),
      sequencer.submit(msg("a", "second"), handle),
      sequencer.submit(msg("b", "other chat"), handle),
      sequencer.submit(msg("a", "/stop"), handle),
    ];
    await new Promise((r) => setTimeout(r, 20));
    expect([...log].sort()).toEqual(["a:/stop", "b:other chat"]);
    release();
    await Promise.all(done);
    expect(log.slice(2)).toEqual(["a:slow", "a:second"]);
  });

  it("keeps going after a handler fails", async () => {
    const sequencer = new InboundSequencer();
    const failing = sequencer.submit(msg("a", "x"), async () => {
      throw new Error("boom");
    });
    await expect(failing).rejects.toThrow("boom");
    await expect(sequencer.submit(msg("a", "y"), async () => ({ kind: "duplicate" }))).resolves.toEqual({
      kind: "duplicate",
    });
  });
});
