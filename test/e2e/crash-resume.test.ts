import { RunRecords } from "@hub/sessions";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeOpenAI, type FakeTelegram, privateText } from "../fakes/src/index.js";
import type { Installation } from "../support/installation.js";
import { REDIS_URL, waitFor } from "../support/redis.js";
import { telegramInstallation } from "../support/telegram-installation.js";

// A hub SIGKILLed while it streams an answer (after its first paragraph went out) and started again:
// the resumed attempt answers again, but does not send what the user already has when it repeats it.
// Killed once the whole answer is queued, the run is finished from it without answering again.
const USER = 7373;
let model: FakeOpenAI;
let telegram: FakeTelegram;
let inst: Installation;
let close: () => Promise<void>;
beforeEach(async () => {
  ({ model, telegram, inst, close } = await telegramInstallation("crash-resume", USER, {
    channel: { streaming: "off" },
  }));
});
afterEach(() => close());

// Paragraphs long enough that Telegram's blocks (1,500 characters at least) are cut between them.
const paragraphs = (tag: string, n: number) =>
  Array.from(
    { length: n },
    (_, i) => `${tag} paragraph ${i}. ${"Some more words to read. ".repeat(36)}`,
  ).join("\n\n");
const sentTexts = () => telegram.sent(USER).map((m) => String(m.text));
const copiesOf = (text: string) => sentTexts().filter((t) => t.includes(text)).length;

// The answers staged under `prefix` (`answer:<runId>`, written by a reply's last push and deleted by
// its run's settle), by their text.
async function stagedAnswers(prefix: string): Promise<string[]> {
  const redis = new Redis(REDIS_URL);
  try {
    const runs = new RunRecords(redis, prefix);
    const keys = await redis.keys(`${prefix}:answer:*`);
    const runIds = keys.map((k) => k.slice(`${prefix}:answer:`.length));
    const staged = await Promise.all(runIds.map((runId) => runs.stagedAnswer(runId)));
    return staged.flatMap((answer) => (answer ? [answer.text] : []));
  } finally {
    redis.disconnect();
  }
}

/** Starts a hub that dies right before pushing its answer's 2nd block, sends a message and waits for the death. */
async function killedAfterFirstBlock(text: string): Promise<void> {
  const a = await inst.start({ failpoints: "run.before-push=kill@2" });
  telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text }));
  await a.hub.exited;
  // The first paragraph was handed to delivery before the death, and delivery is durable.
  await inst.start();
}

describe("an answer cut by a crash, resumed after the restart", () => {
  it("repeats nothing the user already has when the resumed answer starts the same way", async () => {
    const answer = paragraphs("Same", 4);
    model.script({ text: answer, chunkSize: 40, delayMs: 15 }, { text: answer, chunkSize: 40 });
    await killedAfterFirstBlock("tell me four things");
    await waitFor(() => copiesOf("Same paragraph 3.") === 1, "the resumed answer's end", 40_000);
    await new Promise((r) => setTimeout(r, 1000));
    // Two model calls (the cut attempt and the resumed one), and every paragraph reached the chat once.
    expect(model.requests).toHaveLength(2);
    for (let i = 0; i < 4; i++) expect(copiesOf(`Same paragraph ${i}.`), `paragraph ${i}`).toBe(1);
  }, 90_000);

  it("killed again while resumed: the third attempt sends only what neither earlier one did", async () => {
    const answer = paragraphs("Twice", 8);
    const slow = { text: answer, chunkSize: 40, delayMs: 15 };
    model.script(slow, slow, { text: answer, chunkSize: 40 });
    const first = await inst.start({ failpoints: "run.before-push=kill@2" });
    telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text: "tell me eight things" }));
    await first.hub.exited;
    // The resumed attempt drops the block the user has, pushes the next one, and dies before a third.
    const second = await inst.start({ failpoints: "run.before-push=kill@2" });
    await second.hub.exited;
    await inst.start();
    await waitFor(() => copiesOf("Twice paragraph 7.") === 1, "the answer's end", 40_000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(model.requests).toHaveLength(3);
    for (let i = 0; i < 8; i++) expect(copiesOf(`Twice paragraph ${i}.`), `paragraph ${i}`).toBe(1);
  }, 90_000);

  it("sends the whole new answer when it differs: nothing is lost, the old first paragraph stays", async () => {
    model.script(
      { text: paragraphs("Old", 4), chunkSize: 40, delayMs: 15 },
      { text: paragraphs("New", 3), chunkSize: 40 },
    );
    await killedAfterFirstBlock("tell me three things");
    await waitFor(() => copiesOf("New paragraph 2.") === 1, "the resumed answer's end", 40_000);
    await new Promise((r) => setTimeout(r, 1000));
    // The cut attempt's first block (paragraphs 0 and 1) went out; nothing after it.
    expect(copiesOf("Old paragraph 0.")).toBe(1);
    expect(copiesOf("Old paragraph 2.")).toBe(0);
    for (let i = 0; i < 3; i++) expect(copiesOf(`New paragraph ${i}.`), `paragraph ${i}`).toBe(1);
  }, 90_000);

  it("killed between its last block's push and the settle's write: finished from its staged answer, sent once", async () => {
    const answer = "The one answer, queued whole before the crash.";
    const never = "A second answer, which no model call is made for.";
    model.script({ text: answer }, { text: never });
    // The 1st append is the run's writer line with the question; the 2nd, the settle's answer and outcome,
    // after the push of the answer's only (last) block.
    const a = await inst.start({ failpoints: "transcript.before-append=kill@2" });
    telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text: "answer me once" }));
    await a.hub.exited;
    // Killed after the push: the answer was staged in that push's own step.
    expect(await stagedAnswers(inst.prefix)).toEqual([answer]);
    await inst.start();
    await waitFor(async () => (await stagedAnswers(inst.prefix)).length === 0, "the run's settle", 40_000);
    await waitFor(() => copiesOf(answer) >= 1, "the answer", 40_000);
    await new Promise((r) => setTimeout(r, 1500));
    // One model call, one answer: the resumed attempt wrote and settled the staged one, and queued nothing.
    expect(model.requests).toHaveLength(1);
    expect(copiesOf(answer)).toBe(1);
    expect(copiesOf(never)).toBe(0);
  }, 90_000);
});
