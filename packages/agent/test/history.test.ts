import type { TranscriptEntry } from "@hub/sessions";
import { describe, expect, it } from "vitest";
import { compactionMessage, estimateTokens } from "../src/context/compaction.js";
import { userContent } from "../src/context/untrusted.js";
import { historyMessages, historyOfHeld, writtenBy } from "../src/history.js";
import type { ChatMessage } from "../src/model.js";

/**
 * The history built the plain way, as the hub did before it was built line by line: the latest
 * compaction's summary, then every line from its first kept one, users' lines naming their sender
 * when more than one person (or a group message not addressed to the agent) is in the whole transcript.
 */
function reference(
  entries: TranscriptEntry[],
  skipRunId?: string,
): { messages: ChatMessage[]; indices: number[] } {
  const messages: ChatMessage[] = [];
  const indices: number[] = [];
  const compaction = entries.findLast((e) => e.type === "compaction");
  if (compaction?.type === "compaction") {
    messages.push(compactionMessage(compaction.summary));
    indices.push(-1);
  }
  const users = entries.filter((e) => e.type === "user");
  const several = new Set(users.map((e) => e.senderId ?? "")).size > 1 || users.some((e) => e.contextOnly);
  const start = compaction?.type === "compaction" ? compaction.keepFrom : 0;
  entries.forEach((e, i) => {
    if (i < start || (skipRunId && "runId" in e && e.runId === skipRunId)) return;
    if (e.type === "user") messages.push({ role: "user", content: userContent(e, several) });
    else if (e.type === "assistant")
      messages.push({
        role: "assistant",
        content: e.text,
        ...(e.toolCalls ? { toolCalls: e.toolCalls } : {}),
      });
    else if (e.type === "tool_result")
      messages.push({ role: "tool", toolCallId: e.toolCallId, content: e.content });
    else return;
    indices.push(i);
  });
  return { messages, indices };
}

const user = (n: number, senderId = "u1", contextOnly = false): TranscriptEntry => ({
  type: "user",
  runId: `r${n}`,
  senderId,
  senderName: `name ${senderId}`,
  text: `question ${n}`,
  at: n,
  ...(contextOnly ? { contextOnly: true } : {}),
});
const answer = (n: number): TranscriptEntry => ({
  type: "assistant",
  runId: `r${n}`,
  text: `answer ${n}`,
  at: n,
});
const toolCall = (n: number): TranscriptEntry => ({
  type: "assistant",
  runId: `r${n}`,
  text: "",
  toolCalls: [{ id: `c${n}`, name: "lookup", arguments: "{}" }],
  at: n,
});
const toolResult = (n: number): TranscriptEntry => ({
  type: "tool_result",
  runId: `r${n}`,
  toolCallId: `c${n}`,
  content: `result ${n}`,
  at: n,
});
const outcome = (n: number): TranscriptEntry => ({
  type: "outcome",
  runId: `r${n}`,
  status: "completed",
  at: n,
});

// A seeded generator, so a failure can be replayed.
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

/** A session's lines as runs append them: each run's question, maybe a tool step, its answer, its outcome. */
function* runs(seed: number, count: number): Generator<TranscriptEntry[]> {
  const next = random(seed);
  const lines: TranscriptEntry[] = [];
  for (let n = 0; n < count; n++) {
    const r = next();
    const run: TranscriptEntry[] = [];
    // Mostly one sender; now and then a second one or a group message not addressed to the agent.
    run.push(user(n, r < 0.1 ? "u2" : "u1", r > 0.95));
    if (next() < 0.3) run.push(toolCall(n), toolResult(n));
    run.push(answer(n), outcome(n));
    if (n > 3 && next() < 0.08)
      run.push({
        type: "compaction",
        runId: `r${n}`,
        summary: `summary ${n}`,
        keepFrom: lines.length - 2,
        at: n,
      });
    lines.push(...run);
    yield run;
  }
}

describe("historyOfHeld", () => {
  it("equals the history built whole from the same lines, run after run", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const lines: TranscriptEntry[] = [];
      for (const run of runs(seed, 30)) {
        // The run's question is appended first; its history is what came before it.
        const count = lines.length;
        lines.push(...run);
        const held = historyOfHeld(lines, count);
        const expected = reference(lines.slice(0, count));
        expect({ seed, messages: held.messages, indices: held.indices }).toEqual({ seed, ...expected });
        expect(held.tokens).toBe(estimateTokens(expected.messages));
        expect(held.lastCompaction).toBe(lines.slice(0, count).findLast((e) => e.type === "compaction"));
      }
    }
  });

  it("built whole, leaves out a run's own lines as the plain way does", () => {
    for (let seed = 41; seed <= 60; seed++) {
      const lines = [...runs(seed, 30)].flat();
      const skip = `r${seed % 30}`;
      const whole = historyMessages(lines, skip);
      expect({ seed, messages: whole.messages, indices: whole.indices }).toEqual({
        seed,
        ...reference(lines, skip),
      });
    }
  });

  it("leaves a resumed run's own question out in place: line numbers stay the transcript's", () => {
    // A resumed run's question sits among the lines (its dead attempt wrote it), before later context.
    const own = user(9, "u2");
    const lines: TranscriptEntry[] = [user(0), answer(0), outcome(0), own, user(1), answer(1)];
    lines.push(
      { type: "compaction", runId: "r1", summary: "earlier", keepFrom: 4, at: 1 },
      user(2),
      answer(2),
    );
    const history = historyMessages(lines, undefined, (e) => e === own);
    // The summary, then the lines from the kept one on (line 4: user 1), each numbered as in the transcript.
    expect(history.indices).toEqual([-1, 4, 5, 7, 8]);
    expect(history.messages.map((m) => m.content)).toEqual([
      compactionMessage("earlier").content,
      "question 1",
      "answer 1",
      "question 2",
      "answer 2",
    ]);
    // Left out everywhere: its sender (a second person) does not make the others say who wrote them.
    expect(history.messages[1]).toEqual({ role: "user", content: "question 1" });
  });

  it("says who wrote every earlier message once a second person writes", () => {
    const lines = [user(0), answer(0), user(1), answer(1)];
    expect(historyOfHeld(lines, 4).messages[0]).toEqual({ role: "user", content: "question 0" });
    lines.push(user(2, "u2"), answer(2));
    const history = historyOfHeld(lines, 6);
    expect(history.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      `[from "name u1" (id "u1")]\nquestion 0`,
      `[from "name u1" (id "u1")]\nquestion 1`,
      `[from "name u2" (id "u2")]\nquestion 2`,
    ]);
    expect(history.tokens).toBe(estimateTokens([...history.messages]));
  });

  it("turns only the lines added since the last run into messages", () => {
    const backing: TranscriptEntry[] = [];
    for (let n = 0; n < 50; n++) backing.push(user(n), answer(n), outcome(n));
    let reads = 0;
    const lines = new Proxy(backing, {
      get(target, key, receiver) {
        if (typeof key === "string" && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
    });
    historyOfHeld(lines, 150);
    expect(reads).toBeGreaterThanOrEqual(150);
    backing.push(user(50), answer(50), outcome(50));
    reads = 0;
    const history = historyOfHeld(lines, 153);
    expect(history.messages).toHaveLength(102);
    // Each new line read once to count its sender and once to turn it into a message, none of the old ones.
    expect(reads).toBeLessThanOrEqual(6);
  });
});

describe("writtenBy", () => {
  it("tags a copy of the line with its writer and leaves the line as it was", () => {
    const lines: TranscriptEntry[] = [
      { type: "user", runId: "r-1", messageId: "m-1", senderId: "u-1", text: "hi", at: 1 },
      { type: "assistant", runId: "r-1", text: "hello", at: 2 },
      { type: "outcome", runId: "r-1", status: "completed", stopReason: "stop", at: 3 },
    ];
    const before = structuredClone(lines);
    const tagged = lines.map((line) => writtenBy(line, "r-1#7"));
    expect(tagged).toEqual(before.map((line) => ({ ...line, writer: "r-1#7" })));
    expect(lines).toEqual(before);
    expect(tagged.every((line, i) => line !== lines[i])).toBe(true);
  });
});
