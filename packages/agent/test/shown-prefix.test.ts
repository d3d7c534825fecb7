import type { HashNote, PushNote, ReplyStream } from "@hub/core";
import { describe, expect, it } from "vitest";
import { OrderedBlockPusher } from "../src/block-pusher.js";
import { type ShownPrefix, ShownPrefixFilter, ShownText } from "../src/shown-prefix.js";

const shownOf = (...blocks: string[]): ShownPrefix => {
  const text = new ShownText();
  let last: ShownPrefix = { chars: 0, sig: "" };
  for (const block of blocks) last = text.add(block);
  return last;
};

/** A reply that records the blocks pushed to it. */
function recordingReply(): ReplyStream & { pushed: string[]; notes: HashNote[]; lasts: string[] } {
  const pushed: string[] = [];
  const notes: HashNote[] = [];
  const lasts: string[] = [];
  return {
    replyId: "r",
    pushed,
    notes,
    lasts,
    push: async (block, note, options) => {
      pushed.push(block);
      if (note && "fields" in note) notes.push(note);
      if (options?.last) lasts.push(block);
    },
    end: async () => pushed.length,
    settled: async () => ({ total: pushed.length, delivered: pushed.length, failed: 0 }),
  };
}

describe("a resumed attempt does not repeat what the interrupted one showed", () => {
  it("drops blocks that repeat the shown prefix exactly and passes the rest", () => {
    const filter = new ShownPrefixFilter(shownOf("One.", "Two."));
    expect(filter.take(["One."])).toEqual([]);
    expect(filter.take(["Two.", "Three."])).toEqual(["Three."]);
    expect(filter.take(["Four."])).toEqual(["Four."]);
    expect(filter.release()).toEqual([]);
  });

  it("matches by text, whatever the blocks' cuts: a block running past the prefix keeps only what is new", () => {
    const filter = new ShownPrefixFilter(shownOf("One.", "Two."));
    expect(filter.take(["One.\n\nTwo.\n\nThree."])).toEqual(["Three."]);
  });

  it("passes every held block when the new answer differs", () => {
    const filter = new ShownPrefixFilter(shownOf("One.", "Two."));
    expect(filter.take(["Uno."])).toEqual([]);
    expect(filter.take(["Dos."])).toEqual(["Uno.", "Dos."]);
  });

  it("passes what it holds when the answer ends before it covers the prefix", () => {
    const filter = new ShownPrefixFilter(shownOf("One.", "Two."));
    expect(filter.take(["One."])).toEqual([]);
    expect(filter.release()).toEqual(["One."]);
  });

  it("finish stages its note on the last push only; the blocks before it carry what was shown", async () => {
    const reply = recordingReply();
    const notes: PushNote[] = [];
    const push = reply.push;
    reply.push = async (block, note, options) => {
      if (note) notes.push(note);
      return push(block, note, options);
    };
    const noteOf = (shown: ShownPrefix): HashNote => ({ key: "run:1", fields: { ...shown } });
    const pusher = new OrderedBlockPusher(reply, { noteOf });
    const staged = { key: "answer:1", value: "{}", ttlSeconds: 60 };
    await pusher.finish(["One.", "Two.", "Three."], staged);
    expect(reply.lasts).toEqual(["Three."]);
    expect(notes.map((n) => ("value" in n ? "staged" : n.fields.chars))).toEqual([4, 10, "staged"]);
  });

  it("each push carries what the reply has shown with it, and a resumed pusher skips that much", async () => {
    const first = recordingReply();
    const noteOf = (shown: ShownPrefix): HashNote => ({ key: "run:1", fields: { ...shown } });
    const a = new OrderedBlockPusher(first, { noteOf });
    a.push(["One.", "Two."]);
    await a.drained();
    expect(first.pushed).toEqual(["One.", "Two."]);
    expect(first.notes.map((n) => n.fields.chars)).toEqual([4, 10]);

    const last = first.notes.at(-1)!.fields;
    const resumed = recordingReply();
    const b = new OrderedBlockPusher(resumed, {
      shown: { chars: Number(last.chars), sig: String(last.sig) },
      noteOf,
    });
    b.push(["One."]);
    b.push(["Two.", "Three."]);
    await b.drained();
    expect(resumed.pushed).toEqual(["Three."]);
    // Its note counts the blocks it dropped too: the user has "One. Two. Three." now.
    expect(resumed.notes.map((n) => n.fields)).toEqual([{ ...shownOf("One.", "Two.", "Three.") }]);
  });

  it("an attempt resumed a second time skips what the first resumed one pushed", async () => {
    const noteOf = (shown: ShownPrefix): HashNote => ({ key: "run:1", fields: { ...shown } });
    const lastNote = (reply: { notes: HashNote[] }): ShownPrefix => {
      const { chars, sig } = reply.notes.at(-1)!.fields;
      return { chars: Number(chars), sig: String(sig) };
    };
    // The first attempt showed "One."; the second repeated it, added "Two." and died.
    const first = recordingReply();
    const a = new OrderedBlockPusher(first, { noteOf });
    a.push(["One."]);
    await a.drained();
    const second = recordingReply();
    const b = new OrderedBlockPusher(second, { shown: lastNote(first), noteOf });
    b.push(["One.", "Two."]);
    await b.drained();
    expect(second.pushed).toEqual(["Two."]);
    // The third says the same and more: only the new part goes out.
    const third = recordingReply();
    const c = new OrderedBlockPusher(third, { shown: lastNote(second), noteOf });
    await c.finish(["One.", "Two.", "Three."]);
    expect(third.pushed).toEqual(["Three."]);
    expect(third.lasts).toEqual(["Three."]);
  });

  it("a resumed attempt that answers differently pushes its answer whole, and its note is that answer's", async () => {
    const noteOf = (shown: ShownPrefix): HashNote => ({ key: "run:1", fields: { ...shown } });
    const reply = recordingReply();
    const pusher = new OrderedBlockPusher(reply, { shown: shownOf("One.", "Two."), noteOf });
    pusher.push(["Uno.", "Dos."]);
    await pusher.drained();
    expect(reply.pushed).toEqual(["Uno.", "Dos."]);
    expect(reply.notes.map((n) => n.fields)).toEqual([
      { ...shownOf("Uno.") },
      { ...shownOf("Uno.", "Dos.") },
    ]);
  });

  it("finish ends the reply with its last block, held blocks of a resumed attempt pushed first", async () => {
    const reply = recordingReply();
    const pusher = new OrderedBlockPusher(reply, { shown: shownOf("One.", "Two.") });
    pusher.push(["One."]);
    await pusher.finish(["Uno.", "Dos."]);
    expect(reply.pushed).toEqual(["One.", "Uno.", "Dos."]);
    expect(reply.lasts).toEqual(["Dos."]);
    // Nothing left to push: the reply's own end ends it.
    const empty = recordingReply();
    await new OrderedBlockPusher(empty).finish([]);
    expect(empty.lasts).toEqual([]);
  });
});
