import { describe, expect, it } from "vitest";
import { dropStaleWrites, type TranscriptEntry, VisibleLines, writerGeneration } from "../src/transcript.js";

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

  // Generations as claims now start them (at the time in ms).
  const g = (n: number) => 1_796_585_299_000 + n;

  it("takes a claim line with a lower generation than one before it for a late one: it and its lines unseen", () => {
    // a frozen between its claim and its first write; b took over and wrote; a woke and wrote.
    const late: TranscriptEntry[] = [
      { type: "session", sessionId: "s", sessionKey: "k", at },
      claim(`b#${g(2)}`),
      said("b's question", `b#${g(2)}`),
      claim(`a#${g(1)}`),
      said("a's late question", `a#${g(1)}`),
      said("b's answer", `b#${g(2)}`),
      said("context only"),
    ];
    const seen = (lines: TranscriptEntry[]) => lines.map((e) => ("text" in e ? e.text : e.type));
    expect(seen(dropStaleWrites(late))).toEqual([
      "session",
      "writer",
      "b's question",
      "b's answer",
      "context only",
    ]);
    for (let cut = 0; cut <= late.length; cut++) {
      const visible = new VisibleLines(late.slice(0, cut));
      for (const line of late.slice(cut)) visible.add([line]);
      expect(visible.lines).toEqual(dropStaleWrites(late));
    }
  });

  it("takes a claim line that names no generation as a claim, as before, and a newer one after it", () => {
    const lines: TranscriptEntry[] = [
      claim(`r#${g(5)}`),
      said("r's late line", `r#${g(5)}`),
      claim("r#finalized"),
      said("r's line after its finalize", `r#${g(5)}`),
      claim(`q#${g(6)}`),
      said("q's question", `q#${g(6)}`),
      claim(`p#${g(4)}`),
      said("p's late question", `p#${g(4)}`),
    ];
    expect(
      dropStaleWrites(lines).map((e) => ("text" in e ? e.text : e.type === "writer" ? e.writer : e.type)),
    ).toEqual([`r#${g(5)}`, "r's late line", "r#finalized", `q#${g(6)}`, "q's question"]);
  });

  it("orders no claims by generations from a random base (older versions'), as before; the first newer one orders", () => {
    // Redis lost its data under an older version: the session's generations started again lower.
    const lines: TranscriptEntry[] = [
      claim("a#2000000000"),
      said("a's question", "a#2000000000"),
      claim("b#1000"),
      said("b's question", "b#1000"),
      claim(`c#${g(1)}`),
      said("c's question", `c#${g(1)}`),
      claim("d#1001"),
      said("d's question", "d#1001"),
    ];
    expect(dropStaleWrites(lines).flatMap((e) => ("text" in e ? [e.text] : []))).toEqual([
      "a's question",
      "b's question",
      "c's question",
      "d's question",
    ]);
  });

  it("takes a new transcript's first line for a floor, not a claim: a run of that very generation stays the writer", () => {
    const lines: TranscriptEntry[] = [
      { type: "session", sessionId: "s2", sessionKey: "k", at },
      claim(`r#${g(7)}`),
      said("r's question", `r#${g(7)}`),
      { type: "writer", runId: "/new", writer: `/new#${g(7)}`, at },
      said("r's answer", `r#${g(7)}`),
      claim(`a#${g(6)}`),
      said("a's late question", `a#${g(6)}`),
    ];
    expect(dropStaleWrites(lines).flatMap((e) => ("text" in e ? [e.text] : []))).toEqual([
      "r's question",
      "r's answer",
    ]);
  });

  it("reads a claim's generation after the last #, and none from a writer that names none", () => {
    expect(writerGeneration("run#with#hashes#1796585299897")).toBe(1796585299897);
    expect(writerGeneration("run#finalized")).toBeUndefined();
    expect(writerGeneration("run#")).toBeUndefined();
    expect(writerGeneration("run#1.5")).toBeUndefined();
    expect(writerGeneration("1796585299897")).toBeUndefined();
  });
});
