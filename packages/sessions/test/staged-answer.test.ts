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
    await runs.dropAnswer("bad");
    expect(await redis.exists(runs.answerKeyOf("bad"))).toBe(0);
  });
});
