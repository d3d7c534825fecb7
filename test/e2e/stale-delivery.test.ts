import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeTelegram, privateText, startFakeTelegram } from "../fakes/src/index.js";
import { type Installation, installation } from "../support/installation.js";
import { REDIS_URL, waitFor } from "../support/redis.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";

// `delivery.maxAge` (issue 16), read from the config file by real processes: answers that waited
// longer than that for a delivery process are not sent when one starts; the chat is told once.
const USER = 7301;
const installs: Installation[] = [];
let telegram: FakeTelegram;
beforeAll(async () => {
  telegram = await startFakeTelegram();
});
afterAll(async () => telegram.close());
afterEach(async () => {
  for (const i of installs.splice(0)) await i.dispose();
});

const sentTexts = () => telegram.sent(USER).map((m) => String(m.text));
const NOTICE = /could not be delivered in time and was dropped/;

async function completedRuns(redis: Redis, prefix: string): Promise<number> {
  const keys = await redis.keys(`${prefix}:run:*`);
  const statuses = await Promise.all(keys.map((key) => redis.hget(key, "status")));
  return statuses.filter((status) => status === "completed").length;
}

describe("delivery.maxAge from the config file", () => {
  it("answers older than maxAge when delivery starts are not sent, the chat is told once, and new answers go out", async () => {
    const inst = installation("stale-delivery", {
      config: {
        delivery: { maxAge: "2s" },
        channels: { telegram: fakeTelegramChannel(telegram, [USER]) },
      },
    });
    installs.push(inst);
    const redis = new Redis(REDIS_URL);
    try {
      await inst.start({ roles: "ingress,agent" });
      // Two answers queued one after the other, and no delivery process to send them.
      for (const [i, text] of ["first stale question", "second stale question"].entries()) {
        telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text }));
        await waitFor(
          async () => (await completedRuns(redis, inst.prefix)) === i + 1,
          `run ${i + 1}`,
          20_000,
        );
      }
    } finally {
      redis.disconnect();
    }
    await new Promise((r) => setTimeout(r, 3000));
    await inst.start({ roles: "delivery" });
    await waitFor(() => sentTexts().some((t) => NOTICE.test(t)), "the lost-answer notice", 20_000);
    telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text: "a fresh question" }));
    await waitFor(() => sentTexts().some((t) => t.includes("a fresh question")), "the fresh answer", 20_000);
    expect(sentTexts().filter((t) => NOTICE.test(t))).toHaveLength(1);
    expect(sentTexts().filter((t) => t.includes("stale question"))).toEqual([]);
  }, 60_000);
});
