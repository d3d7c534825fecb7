import type { ReplyStream } from "@hub/core";
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
function recordingReply(): ReplyStream & { pushed: string[] } {
  const pushed: string[] = [];
  return {
    replyId: "r",
    pushed,
    push: async (block: string) => {
      pushed.push(block);
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

  it("the pusher records what it showed after each block, and a resumed pusher skips that much", async () => {
    const first = recordingReply();
    const notes: ShownPrefix[] = [];
    const a = new OrderedBlockPusher(first, { onShown: async (s) => void notes.push(s) });
    a.push(["One.", "Two."]);
    await a.drained();
    expect(first.pushed).toEqual(["One.", "Two."]);
    expect(notes.map((n) => n.chars)).toEqual([4, 10]);

    const resumed = recordingReply();
    const b = new OrderedBlockPusher(resumed, {
      shown: notes.at(-1),
      onShown: async (s) => void notes.push(s),
    });
    b.push(["One."]);
    b.push(["Two.", "Three."]);
    await b.drained();
    expect(resumed.pushed).toEqual(["Three."]);
    // A resumed attempt compares itself with the first account; it does not overwrite it.
    expect(notes).toHaveLength(2);
  });
});
