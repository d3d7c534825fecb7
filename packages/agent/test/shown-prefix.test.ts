import type { HashNote, ReplyStream } from "@hub/core";
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
      if (note) notes.push(note);
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
    // A resumed attempt compares itself with the first account; it does not overwrite it.
    expect(resumed.notes).toEqual([]);
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
