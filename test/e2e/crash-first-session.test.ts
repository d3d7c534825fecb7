import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeOpenAI, type FakeTelegram, privateText } from "../fakes/src/index.js";
import type { Installation } from "../support/installation.js";
import { waitFor } from "../support/redis.js";
import { telegramInstallation } from "../support/telegram-installation.js";

// A hub killed (SIGKILL) or frozen (SIGSTOP) right after it created a new chat's first transcript and
// before it wrote the header: the file is there, empty. Whoever runs the chat next starts it anew (an
// indexed session) and the user gets one answer, with the question kept in the chat's history.
const USER = 4242;
let model: FakeOpenAI;
let telegram: FakeTelegram;
let inst: Installation;
let close: () => Promise<void>;
beforeEach(async () => {
  ({ model, telegram, inst, close } = await telegramInstallation("crash-first-session", USER, {
    channel: { streaming: "off" },
    env: { HUB_LANE_LEASE_MS: "1500" },
  }));
});
afterEach(() => close());

const sentTexts = () => telegram.sent(USER).map((m) => String(m.text));
const transcripts = () =>
  readdirSync(join(inst.stateDir, "transcripts")).map((name) => ({
    name,
    bytes: statSync(join(inst.stateDir, "transcripts", name)).size,
  }));

/** Sends a second message and returns what the model was given for it. */
async function nextTurnHistory(): Promise<string> {
  telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text: "and what did I ask first?" }));
  await waitFor(() => sentTexts().includes("You asked about the moon."), "the second answer", 30_000);
  const request = model.requests.find((r) => JSON.stringify(r.messages).includes("what did I ask first"));
  return JSON.stringify(request?.messages);
}

/**
 * What must hold once the chat was answered: one answer, the question once in its history, one index.
 * Returns what the first transcript holds.
 */
async function expectOneAnswerAndHistory(): Promise<string> {
  await waitFor(() => sentTexts().includes("The moon is far."), "the answer", 30_000);
  const history = await nextTurnHistory();
  expect(sentTexts()).toEqual(["The moon is far.", "You asked about the moon."]);
  expect(history.split("how far is the moon?")).toHaveLength(2);
  expect(history).toContain("The moon is far.");
  // The chat moved to an indexed session; the first transcript holds what the crash left (nothing) or
  // what the frozen process wrote when it woke (its header and its run's first write), never an answer.
  expect(readdirSync(join(inst.stateDir, "sessions"))).toHaveLength(1);
  const [first, ...others] = transcripts().filter((t) => t.name.startsWith("k-"));
  expect(others).toEqual([]);
  const content = readFileSync(join(inst.stateDir, "transcripts", first!.name), "utf8");
  const types = content.split("\n").flatMap((l) => (l ? [JSON.parse(l).type] : []));
  expect(types).toEqual(expect.not.arrayContaining(["assistant"]));
  return content;
}

describe("a new chat's first transcript created, its header not yet written", () => {
  it("killed there: after the restart the chat is answered once and keeps its question", async () => {
    model.script({ text: "The moon is far." }, { text: "You asked about the moon." });
    const a = await inst.start({ failpoints: "transcript.after-create=kill@1" });
    telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text: "how far is the moon?" }));
    await a.hub.waitForOutput(/failpoint transcript\.after-create: kill/);
    await a.hub.exited;
    expect(transcripts()).toEqual([{ name: expect.stringMatching(/^k-[0-9a-f]{40}\.jsonl$/), bytes: 0 }]);
    await inst.start();
    // Nothing was written to the first transcript after the crash.
    expect(await expectOneAnswerAndHistory()).toBe("");
  }, 90_000);

  it("frozen there while another process answers: after it wakes, still one answer and one session", async () => {
    model.script({ text: "The moon is far." }, { text: "You asked about the moon." });
    const a = await inst.start({ failpoints: "transcript.after-create=stop@1" });
    telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text: "how far is the moon?" }));
    await a.hub.waitForOutput(/failpoint transcript\.after-create: stop/);
    await inst.start();
    await waitFor(
      () => sentTexts().includes("The moon is far."),
      "the answer from the other process",
      30_000,
    );
    a.hub.resume();
    await a.hub.waitForOutput(/lost the session lane/);
    // The run it left is not in flight there any more: a stop drains nothing and does not wait its budget.
    const stopping = Date.now();
    a.hub.child.kill("SIGTERM");
    await a.hub.exited;
    expect(Date.now() - stopping).toBeLessThan(20_000);
    expect(a.hub.output.join("")).toMatch(/"runs":0,"msg":"draining/);
    expect(a.hub.output.join("")).not.toContain("still in flight");
    // What the woken process wrote there, read by nobody: its header, and its run's writer and user lines.
    const first = await expectOneAnswerAndHistory();
    expect(first.split("\n").flatMap((l) => (l ? [JSON.parse(l).type] : []))).toEqual([
      "session",
      "writer",
      "user",
    ]);
  }, 90_000);
});
