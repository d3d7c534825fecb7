import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { MAX_CODES_PER_SENDER_PER_DAY, MAX_PENDING, PairingStore, pairingNotice } from "../src/pairing.js";

const redis = new Redis(REDIS_URL);
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await dropPrefix(p);
  redis.disconnect();
});

function store(): PairingStore {
  const prefix = testPrefix("pairing");
  prefixes.push(prefix);
  return new PairingStore(redis, prefix);
}
const ask = (s: PairingStore, senderId: string) =>
  s.request({
    channel: "telegram",
    accountId: "default",
    senderId,
    replyTarget: { channel: "telegram", accountId: "default", chatId: senderId },
  });

describe("pairing under a flood of strangers", () => {
  it("a new user gets a code, or once a clear 'try later' when the pool is full; the owner sees the count", async () => {
    const s = store();
    for (let i = 0; i < MAX_PENDING; i++) expect((await ask(s, `s${i}`)).kind).toBe("new");
    const turnedAway = await ask(s, "newcomer");
    expect(turnedAway).toEqual({ kind: "full", notify: true });
    expect(pairingNotice(turnedAway, "code")).toMatch(/try again in an hour/);
    // Asking again is not told again (no message storm), but still counted for the owner.
    expect(await ask(s, "newcomer")).toEqual({ kind: "full", notify: false });
    expect(await s.turnedAway()).toEqual({ "telegram:default": 2 });
  }, 20_000);

  it("one stranger is limited on their own: a few codes a day, never the pool", async () => {
    const s = store();
    for (let i = 0; i < MAX_CODES_PER_SENDER_PER_DAY; i++) {
      const got = await ask(s, "pest");
      expect(got.kind).toBe("new");
      // The owner lets the code lapse: it is gone (as after an hour), and the pest asks again.
      await redis.hdel(`${prefixes.at(-1)}:pairing:pending:telegram:default`, "pest");
    }
    expect(await ask(s, "pest")).toEqual({ kind: "limited" });
    expect(pairingNotice({ kind: "limited" }, "code")).toBeUndefined();
    expect((await ask(s, "someone-else")).kind).toBe("new");
  });
});
