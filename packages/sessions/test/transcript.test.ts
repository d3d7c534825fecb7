import { describe, expect, it } from "vitest";
import { dropStaleWrites, type TranscriptEntry, VisibleLines } from "../src/transcript.js";

const at = 1;
const claim = (writer: string): TranscriptEntry => ({ type: "writer", runId: writer, writer, at });
const said = (text: string, writer?: string): TranscriptEntry => ({
  type: "user",
  text,
  at,
  ...(writer ? { writer } : {}),
});

// Two claims, the first one's writer late: its line after the second claim is what no reader may see.
const transcript: TranscriptEntry[] = [
  { type: "session", sessionId: "s", sessionKey: "k", at },
  claim("a#1"),
  said("a's question", "a#1"),
  claim("b#2"),
  said("a's late line", "a#1"),
  said("context only"),
  said("b's question", "b#2"),
];

describe("what a reader sees of a transcript", () => {
  it("drops the lines a superseded writer wrote after a newer claim, and keeps lines of no writer", () => {
    expect(dropStaleWrites(transcript).map((e) => ("text" in e ? e.text : e.type))).toEqual([
      "session",
      "writer",
      "a's question",
      "writer",
      "context only",
      "b's question",
    ]);
  });

  it("kept up to date line by line, it sees what a reader of the whole transcript sees", () => {
    for (let cut = 0; cut <= transcript.length; cut++) {
      const visible = new VisibleLines(transcript.slice(0, cut));
      for (const line of transcript.slice(cut)) visible.add([line]);
      expect(visible.lines).toEqual(dropStaleWrites(transcript));
    }
  });
});
