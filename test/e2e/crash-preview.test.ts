import { runIdForMessage } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type FakeOpenAI,
  type FakeTelegram,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { fakeModelEnv } from "../support/hub-process.js";
import { type Installation, installation } from "../support/installation.js";
import { REDIS_URL, waitFor } from "../support/redis.js";

// A live preview across a crash: the process that showed it is SIGKILLed mid-stream; the restarted hub
// resumes the run, and the platform ends with the final answer once and no preview left on screen.

const USER = 7301;
/** What a preview shows after its text while the answer is being written. */
const MARK = "…";

describe("a hub killed while a live preview is on screen", () => {
  let telegram: FakeTelegram;
  let model: FakeOpenAI;
  let redis: Redis;
  const installs: Installation[] = [];
  beforeAll(async () => {
    telegram = await startFakeTelegram();
    model = await startFakeOpenAI();
    redis = new Redis(REDIS_URL);
  });
  afterEach(async () => {
    for (const i of installs.splice(0)) await i.dispose();
  });
  afterAll(async () => {
    await telegram.close();
    await model.close();
    redis.disconnect();
  });

  // A hub answering `user` on the fake Telegram with live previews, the fake model its model.
  const previewInstallation = (name: string, user: number, telegramExtra: object = {}): Installation => {
    const inst = installation(name, {
      config: {
        channels: {
          telegram: {
            botToken: telegram.token,
            apiRoot: telegram.apiRoot,
            dmPolicy: "allowlist",
            allowFrom: [String(user)],
            streaming: "preview",
            ...telegramExtra,
          },
        },
      },
      env: fakeModelEnv(model),
    });
    installs.push(inst);
    return inst;
  };
  const completed = (inst: Installation, dedupeKey: string) =>
    waitFor(
      async () =>
        (await redis.hget(`${inst.prefix}:run:${runIdForMessage(dedupeKey)}`, "status")) === "completed",
      "the resumed run to complete",
      40_000,
    );

  it("finalizes the preview after the restart: the final answer once, no stuck preview", async () => {
    const inst = previewInstallation("crash-preview", USER);
    const answer = Array.from(
      { length: 24 },
      (_, i) =>
        `Part ${String(i).padStart(2, "0")}: ${"a long answer streams into a preview, ".repeat(4).trim()}`,
    ).join("\n\n");
    // The killed attempt and the resumed one each stream the whole answer (about 5 s).
    const slow = { text: answer, chunkSize: 40, delayMs: 40 };
    model.script(slow, slow);
    // Killed right after its second preview write (the preview was sent, then edited once).
    const first = await inst.start({ failpoints: "delivery.after-preview=kill@2" });
    telegram.pushUpdate(
      privateText({ chatId: USER, fromId: USER, text: "write a long answer", messageId: 801 }),
    );
    await first.hub.exited;
    const shownAtCrash = telegram.shown(USER);
    expect(shownAtCrash).toHaveLength(1);
    expect(String(shownAtCrash[0]?.message.text)).toContain(MARK);
    expect(shownAtCrash[0]?.edits).toBe(1);

    await inst.start();
    await completed(inst, `telegram:default:${USER}:801`);
    const text = () => telegram.shown(USER).map((m) => String(m.message.text));
    await waitFor(
      () => text().some((t) => t.includes("Part 23")) && !text().some((t) => t.includes(MARK)),
      "the final answer, with no preview left",
      30_000,
    );
    // Longer than the preview interval: nothing more lands after the final text.
    const edits = telegram.callsOf("editMessageText").length;
    await new Promise((r) => setTimeout(r, 2500));
    expect(telegram.callsOf("editMessageText")).toHaveLength(edits);
    const parts = text().flatMap((t) => [...t.matchAll(/Part (\d\d)/g)].map((m) => Number(m[1])));
    expect(parts).toEqual(Array.from({ length: 24 }, (_, i) => i));
    // The preview the crashed process left became the answer's first message (edited in place).
    expect(telegram.shown(USER)[0]?.message.message_id).toBe(shownAtCrash[0]?.message.message_id);
    expect(model.requests).toHaveLength(2);
  }, 90_000);

  it("a resumed run does not preview again what the killed one finished: each part shown once", async () => {
    const user = USER + 1;
    const inst = previewInstallation("crash-preview-part", user);
    // Three paragraphs too long to share a message, each a message of its own; the stream takes about 6 s.
    const parts = [1, 2, 3].map((n) => `Part ${n}: ${`words of part ${n} `.repeat(160).trim()}`);
    const slow = { text: parts.join("\n\n"), chunkSize: 40, delayMs: 30 };
    model.script(slow, slow);
    // Killed right after the first part was finished on screen (its preview edited into the final text).
    const first = await inst.start({ failpoints: "delivery.after-send=kill@1" });
    telegram.pushUpdate(
      privateText({ chatId: user, fromId: user, text: "three parts please", messageId: 802 }),
    );
    await first.hub.exited;
    expect(telegram.shown(user).map((m) => String(m.message.text))).toEqual([parts[0]]);

    await inst.start();
    await completed(inst, `telegram:default:${user}:802`);
    const text = () => telegram.shown(user).map((m) => String(m.message.text));
    await waitFor(() => text().length === 3 && !text().some((t) => t.includes(MARK)), "three parts", 30_000);
    await new Promise((r) => setTimeout(r, 2500));
    expect(text()).toEqual(parts);
    // Not even for a moment: after the restart, no preview showed the first part again.
    const firstId = telegram.shown(user)[0]?.message.message_id;
    const partOne = telegram.calls.filter((c) => {
      const params = c.params as { chat_id?: unknown; text?: unknown };
      return Number(params.chat_id) === user && String(params.text).startsWith("Part 1");
    });
    expect(partOne.filter((c) => c.method === "sendMessage")).toHaveLength(1);
    const edits = partOne.filter((c) => c.method === "editMessageText");
    expect(edits.map((c) => (c.params as { message_id?: unknown }).message_id)).toEqual(
      edits.map(() => firstId),
    );
  }, 90_000);
  it.each([
    [
      "a run found 6 hours old after the restart is not resumed: its preview goes and the user is told",
      3,
      false,
    ],
    [
      "killed right after it finalized a stale run: the next start deletes the preview and tells the user, once",
      5,
      true,
    ],
  ])(
    "%s",
    async (_, userOffset, killedAfterFinalize) => {
      const user = USER + userOffset;
      const messageId = 800 + userOffset + 1;
      const inst = previewInstallation(`crash-preview-stale-${userOffset}`, user);
      model.script({ text: `Never finished. ${"More words. ".repeat(200)}`, chunkSize: 8, delayMs: 100 });
      const requestsBefore = model.requests.length;
      const { hub } = await inst.start();
      telegram.pushUpdate(privateText({ chatId: user, fromId: user, text: "long ago", messageId }));
      const runId = runIdForMessage(`telegram:default:${user}:${messageId}`);
      const runKey = `${inst.prefix}:run:${runId}`;
      await waitFor(
        async () =>
          telegram.shown(user).length === 1 &&
          (await redis.hexists(`${inst.prefix}:preview:${runId}`, "messageId")) === 1,
        "the preview",
        40_000,
      );
      await hub.kill();
      // The clock moved on: the run started six hours ago.
      await redis.hset(runKey, "startedAt", Date.now() - 6 * 3600_000);
      if (killedAfterFinalize) {
        // Killed the moment the run is recorded interrupted: before its preview's close and its notice are queued.
        const finalizing = await inst.start({ failpoints: "run.after-finalize=kill", wait: false });
        await finalizing.hub.exited;
        expect(await redis.hget(runKey, "status")).toBe("interrupted");
        expect(finalizing.hub.output.join("")).toContain("failpoint run.after-finalize: kill");
      }
      await inst.start();
      await waitFor(
        async () => (await redis.hget(runKey, "status")) === "interrupted",
        "the run finalized",
        40_000,
      );
      const notice = /could not finish answering this: I was restarted/;
      await waitFor(
        () => telegram.shown(user).length === 1 && notice.test(String(telegram.shown(user)[0]?.message.text)),
        "the preview deleted and the notice sent",
        20_000,
      );
      // No model call for it, and nothing more once the lane hands its request out and finds it over.
      await new Promise((r) => setTimeout(r, 2_000));
      expect(model.requests.length - requestsBefore).toBe(1);
      const deletes = telegram.callsOf("deleteMessage");
      expect(
        deletes.filter((c) => Number((c.params as { chat_id?: unknown }).chat_id) === user),
      ).toHaveLength(1);
      expect(telegram.shown(user).map((m) => String(m.message.text))).toEqual([
        expect.stringMatching(notice),
      ]);
    },
    120_000,
  );
  it("a run killed on every attempt ends interrupted, deletes the preview it left and tells the user", async () => {
    const user = USER + 2;
    const inst = previewInstallation("crash-preview-interrupted", user, { ackReaction: "👀" });
    // Each attempt streams for half a minute (it is killed long before): the first sends the preview, the
    // resumed ones edit it, and each is SIGKILLed once its preview write is on screen. Shorter than one
    // message, so however slow the machine, no part is finished: the preview stays the only message.
    const endless = { text: `Never finished. ${"More words. ".repeat(200)}`, chunkSize: 8, delayMs: 100 };
    model.script(endless, endless, endless);
    const requestsBefore = model.requests.length;
    const edits = () => telegram.callsOf("editMessageText").length;
    for (let attempt = 1; attempt <= 3; attempt++) {
      const editsBefore = edits();
      const { hub } = await inst.start();
      if (attempt === 1)
        telegram.pushUpdate(privateText({ chatId: user, fromId: user, text: "never ends", messageId: 803 }));
      // Killed only once the hub has recorded the preview's message id: a kill between Telegram's answer and
      // that record leaves a preview no restart can find (the README's documented window), not this case.
      const previewKey = `${inst.prefix}:preview:${runIdForMessage(`telegram:default:${user}:803`)}`;
      // And only once this attempt called the model: a restart first applies an edit the killed attempt had
      // queued, which alone would satisfy the edit count before the resumed attempt streams anything.
      const previewed = async () =>
        model.requests.length - requestsBefore === attempt &&
        telegram.shown(user).length === 1 &&
        (attempt === 1 || edits() > editsBefore) &&
        (await redis.hexists(previewKey, "messageId")) === 1;
      await waitFor(previewed, `attempt ${attempt}'s preview`, 40_000);
      expect(telegram.reactions(user, 803)).toEqual(["👀"]);
      await hub.kill();
      expect(telegram.shown(user).map((m) => String(m.message.text).endsWith(MARK))).toEqual([true]);
    }
    // Out of attempts: the next start ends the run as interrupted, and its preview goes with it.
    await inst.start();
    const runKey = `${inst.prefix}:run:${runIdForMessage(`telegram:default:${user}:803`)}`;
    const status = () => redis.hget(runKey, "status");
    await waitFor(async () => (await status()) === "interrupted", "the run finalized", 40_000);
    // The preview goes, and the user is told once that the message was not answered.
    const notice = /could not finish answering this: I was restarted/;
    await waitFor(
      () => telegram.shown(user).length === 1 && notice.test(String(telegram.shown(user)[0]?.message.text)),
      "the preview deleted and the notice sent",
      20_000,
    );
    await waitFor(() => telegram.reactions(user, 803).length === 0, "the reaction removed", 20_000);
    const deletes = telegram.callsOf("deleteMessage");
    expect(deletes.filter((c) => Number((c.params as { chat_id?: unknown }).chat_id) === user)).toHaveLength(
      1,
    );
    expect(model.requests.length - requestsBefore).toBe(3);
    // The lane still hands the request out after recovery ended it: found over, it sends nothing more.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(telegram.shown(user).map((m) => String(m.message.text))).toEqual([expect.stringMatching(notice)]);
  }, 150_000);
});
