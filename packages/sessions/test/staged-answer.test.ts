import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { RunRecords, type StagedAnswer } from "../src/index.js";

const redis = new Redis(REDIS_URL);
const prefix = testPrefix("staged-answer");
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

const runs = new RunRecords(redis, prefix);
// Writes a note as the fenced push's SET would.
const stage = async (runId: string, answer: StagedAnswer) => {
  const note = runs.answerNote(runId, answer);
  await redis.set(note.key, note.value, "EX", note.ttlSeconds);
  return note;
};
const answer = (text: string, own: string): StagedAnswer => ({
  replyId: "r1",
  entries: [{ type: "assistant", runId: "r1", text: own, at: 1 }],
  text,
  stopReason: "natural_end",
  usage: { inputTokens: 1, outputTokens: 2 },
});

describe("a staged answer", () => {
  it("reads back as staged: its text left out of the note only when it is its lines' own", async () => {
    const one = await stage("one", answer("Only this.", "Only this."));
    expect(JSON.parse(one.value).text).toBeUndefined();
    expect(await runs.stagedAnswer("one")).toEqual(answer("Only this.", "Only this."));
    // An earlier step said something too: the whole text is kept.
    const two = await stage("two", answer("Looking it up. Found it.", "Found it."));
    expect(JSON.parse(two.value).text).toBe("Looking it up. Found it.");
    expect(await runs.stagedAnswer("two")).toEqual(answer("Looking it up. Found it.", "Found it."));
  });

  it("that is damaged or missing is none", async () => {
    await redis.set(runs.answerKeyOf("bad"), "{not json");
    expect(await runs.stagedAnswer("bad")).toBeUndefined();
    expect(await runs.stagedAnswer("missing")).toBeUndefined();
  });

  it("is deleted by the finish that decides its run, with its usage added when given", async () => {
    const usageKey = `${prefix}:usage:s-finish`;
    await runs.start("fin", "s-finish", 60_000);
    await stage("fin", answer("Done.", "Done."));
    // A finish that does not decide (another attempt owns the run) leaves both alone.
    const tokens = { key: usageKey, inputTokens: 5, outputTokens: 3 };
    expect(await runs.finish("fin", { status: "completed" }, 2, tokens)).toBe(false);
    expect(await runs.stagedAnswer("fin")).toBeDefined();
    expect(await runs.finish("fin", { status: "completed" }, 1, tokens)).toBe(true);
    expect(await redis.exists(runs.answerKeyOf("fin"))).toBe(0);
    expect(await redis.hgetall(usageKey)).toEqual({ input: "5", output: "3" });
  });
});
