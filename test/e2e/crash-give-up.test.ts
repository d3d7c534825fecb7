import { runIdForMessage } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type FakeOpenAI,
  type FakeTelegram,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { fakeModelEnv } from "../support/hub-process.js";
import { installation } from "../support/installation.js";
import { REDIS_URL, waitFor } from "../support/redis.js";

// A run whose agent processes freeze past their lane lease, attempt after attempt, until the lane gives
// its item up: the user is told it failed (not left with a cut-off answer), and the attempt frozen last,
// woken after that, sends nothing more.

const USER = 7401;
// Long enough to outlast a hub process's start on a loaded machine: the third agent process's restart
// recovery must find the frozen attempt's lane still held (else it finalizes the run as interrupted itself).
const LEASE_MS = 20_000;
const FROZE = /failpoint run\.before-push: stop/;

describe("a run its lane gives up on", () => {
  let telegram: FakeTelegram;
  let model: FakeOpenAI;
  let redis: Redis;
  beforeAll(async () => {
    telegram = await startFakeTelegram();
    model = await startFakeOpenAI();
    redis = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    await telegram.close();
    await model.close();
    redis.disconnect();
  });

  it("is failed, the chat is told so, and a frozen attempt woken later sends nothing more", async () => {
    const inst = installation("give-up", {
      config: {
        channels: {
          telegram: {
            botToken: telegram.token,
            apiRoot: telegram.apiRoot,
            dmPolicy: "allowlist",
            allowFrom: [String(USER)],
            pacing: { chatIntervalMs: 0, groupIntervalMs: 0, maxSendsPerSecond: 0 },
            ackReaction: "👀",
          },
        },
      },
      env: { ...fakeModelEnv(model), HUB_LANE_LEASE_MS: String(LEASE_MS) },
    });
    try {
      // Five parts, each a message of its own, streamed over about 6 s: each attempt pushes several blocks.
      const parts = [1, 2, 3, 4, 5].map((n) => `Part ${n}: ${`words of part ${n} `.repeat(180).trim()}`);
      const slow = { text: parts.join("\n\n"), chunkSize: 60, delayMs: 25 };
      model.script(slow, slow, slow);
      await inst.start({ roles: "ingress,delivery" });
      const first = await inst.start({ roles: "agent", failpoints: "run.before-push=stop@2" });
      telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text: "five parts", messageId: 900 }));
      // Attempt 1 freezes at its second push; attempt 2, on the other agent process, too.
      await first.hub.waitForOutput(FROZE, 40_000);
      const second = await inst.start({ roles: "agent", failpoints: "run.before-push=stop@2" });
      await second.hub.waitForOutput(FROZE, 80_000);
      // The first wakes (its attempt is fenced) and takes the run as attempt 3; frozen again by hand.
      first.hub.resume();
      await first.hub.waitForOutput(/"attempt":3,"resuming":true/, 80_000);
      await new Promise((r) => setTimeout(r, 300));
      first.hub.child.kill("SIGSTOP");
      // The second dies frozen; a third agent process takes the lane: it hands the item out a fourth time
      // and gives it up. The attempt that put the reaction on last is frozen: only the give-up can take it off.
      expect(telegram.reactions(USER, 900)).toEqual(["👀"]);
      await second.hub.kill();
      await inst.start({ roles: "agent" });
      const runKey = `${inst.prefix}:run:${runIdForMessage(`telegram:default:${USER}:900`)}`;
      await waitFor(
        async () => (await redis.hget(runKey, "status")) === "failed",
        "the run given up",
        90_000,
      );
      const texts = () => telegram.shown(USER).map((m) => String(m.message.text));
      await waitFor(
        () => texts().some((t) => t.startsWith("Sorry, I could not answer")),
        "the notice",
        15_000,
      );
      // No attempt lived to take its acknowledgement off: the give-up does, once the notice is out.
      await waitFor(() => telegram.reactions(USER, 900).length === 0, "the reaction taken off", 15_000);
      // The attempt frozen last wakes after the give-up: fenced, it adds nothing.
      const shown = texts();
      first.hub.resume();
      await new Promise((r) => setTimeout(r, 6000));
      expect(texts()).toEqual(shown);
      expect(shown.at(-1)).toBe(
        "Sorry, I could not answer because of an internal error. The operator can find details in the hub's log.",
      );
      expect(await redis.hget(runKey, "status")).toBe("failed");
    } finally {
      await inst.dispose();
    }
  }, 300_000);
});
