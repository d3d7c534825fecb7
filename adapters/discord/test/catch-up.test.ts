import { redisStateStore } from "@hub/app";
import type { AdapterStateStore } from "@hub/core";
import { memoryStateStore } from "@hub/fakes";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import {
  CHANNEL_IDLE_MS,
  ChannelMarks,
  channelsToRead,
  MAX_CHANNELS,
  snowflakeAt,
  snowflakeTime,
} from "../src/catch-up.js";

// A snowflake made `agoMs` before `now` (the smallest of that millisecond, plus a tie-breaker).
const madeAgo = (now: number, agoMs: number, n = 0) => String(BigInt(snowflakeAt(now - agoMs)) + BigInt(n));

describe("ChannelMarks", () => {
  it("reads back the channels active within a week, most recently active first; idler ones leave the index", async () => {
    const now = Date.UTC(2026, 11, 2, 12);
    const state = memoryStateStore();
    const marks = new ChannelMarks(state, "default");
    await marks.remember("100", "900", madeAgo(now, 60 * 60_000));
    await marks.remember("200", undefined, madeAgo(now, 60_000));
    await marks.remember("300", "900", madeAgo(now, CHANNEL_IDLE_MS + 60_000));
    await marks.remember("400", "900", madeAgo(now, 3 * 24 * 60 * 60_000));
    const loaded = await marks.load(now);
    expect(loaded.map((m) => [m.channelId, m.guildId])).toEqual([
      ["200", undefined],
      ["100", "900"],
      ["400", "900"],
    ]);
    expect(JSON.parse((await state.get("discord:default:channels")) as string)).toEqual({
      "100": "900",
      "200": null,
      "400": "900",
    });
    // Active again: back in the index, read back again.
    await marks.remember("300", "900", madeAgo(now, 1000));
    expect((await marks.load(now)).map((m) => m.channelId)).toEqual(["300", "200", "100", "400"]);
  });

  it("never moves a channel's mark back", async () => {
    const now = Date.now();
    const marks = new ChannelMarks(memoryStateStore(), "default");
    await marks.remember("100", "900", madeAgo(now, 1000, 5));
    await marks.remember("100", "900", madeAgo(now, 2000));
    const [mark] = await marks.load(now);
    expect(mark?.after).toBe(madeAgo(now, 1000, 5));
    expect(Math.abs(snowflakeTime(mark?.after as string) - (now - 1000))).toBeLessThanOrEqual(1);
  });

  it("never moves a channel's mark to an id made in the future (a forged one)", async () => {
    const now = Date.now();
    const marks = new ChannelMarks(memoryStateStore(), "default");
    await marks.remember("100", "900", madeAgo(now, 1000));
    await marks.remember("100", "900", madeAgo(now, -30 * 24 * 60 * 60_000));
    await marks.remember("200", "900", madeAgo(now, -30 * 24 * 60 * 60_000));
    expect((await marks.load(now)).map((m) => [m.channelId, m.after])).toEqual([["100", madeAgo(now, 1000)]]);
  });
});

describe("ChannelMarks while a load reads the index", () => {
  it("a channel first heard from while the index is read stays in the index, in memory and stored", async () => {
    const now = Date.now();
    const store = memoryStateStore();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // A slow read: the index is read before the new channel is heard from, its answer arrives after.
    const slow: AdapterStateStore = {
      set: store.set,
      get: async (key) => {
        const value = await store.get(key);
        if (key === "discord:default:channels") await gate;
        return value;
      },
    };
    const marks = new ChannelMarks(slow, "default");
    await marks.remember("100", "900", madeAgo(now, 60_000));
    const loading = marks.load(now);
    await marks.remember("200", "900", madeAgo(now, 1000));
    release();
    await loading;
    expect(marks.knows("200")).toBe(true);
    expect(JSON.parse(store.values.get("discord:default:channels") as string)).toEqual({
      "100": "900",
      "200": "900",
    });
    // The next process reads it back.
    expect((await new ChannelMarks(store, "default").load(now)).map((m) => m.channelId)).toEqual([
      "200",
      "100",
    ]);
  });
});

// The hub keeps the marks in Redis: what a load costs there, and what it leaves behind.
describe("ChannelMarks in Redis", () => {
  const prefix = testPrefix("dc-marks");
  const redis = new Redis(REDIS_URL);
  afterAll(async () => {
    await dropPrefix(prefix);
    redis.disconnect();
  });
  const DAY = 24 * 60 * 60_000;
  const now = Date.UTC(2026, 11, 2, 12);
  // Each account its own keys: the tests share one prefix.
  const key = (account: string, what: string) => `${prefix}:adapter:discord:${account}:${what}`;
  const index = async (account: string) => JSON.parse((await redis.get(key(account, "channels"))) as string);

  // The store the hub gives the adapter, counting the calls it gets (each one Redis round trip).
  function countedStore(): { store: AdapterStateStore; calls: Record<string, number> } {
    const inner = redisStateStore(redis, prefix);
    const calls: Record<string, number> = { get: 0, set: 0, getMany: 0, delete: 0 };
    const counted = <A extends unknown[], R>(name: string, f: (...args: A) => R) => {
      return (...args: A): R => {
        calls[name] = (calls[name] ?? 0) + 1;
        return f(...args);
      };
    };
    const { getMany, delete: del } = inner;
    const store: AdapterStateStore = {
      get: counted("get", inner.get),
      set: counted("set", inner.set),
      ...(getMany && { getMany: counted("getMany", getMany) }),
      ...(del && { delete: counted("delete", del) }),
    };
    return { store, calls };
  }

  it("reads 600 channels' marks in one round trip; the 500 most recently active are read back, most recent first", async () => {
    const writer = new ChannelMarks(redisStateStore(redis, prefix), "many");
    // Channel c<n> last active n minutes ago, remembered in no particular order.
    const ids = Array.from({ length: 600 }, (_, n) => n);
    for (const n of [...ids.filter((n) => n % 2), ...ids.filter((n) => !(n % 2))])
      await writer.remember(`c${n}`, "900", madeAgo(now, n * 60_000));
    const { store, calls } = countedStore();
    const marks = await new ChannelMarks(store, "many").load(now);
    // The index, then every mark at once; nothing pruned, nothing written.
    expect(calls).toEqual({ get: 1, getMany: 1, set: 0, delete: 0 });
    expect(marks.map((m) => m.channelId)).toEqual(ids.map((n) => `c${n}`));
    const all = channelsToRead(marks, () => false);
    expect(all.read.map((m) => m.channelId)).toEqual(ids.slice(0, MAX_CHANNELS).map((n) => `c${n}`));
    expect(all.skipped).toBe(100);
    // Channels with nothing new since their mark take no place in the 500.
    const quiet = channelsToRead(marks, (m) => Number(m.channelId.slice(1)) < 50);
    expect(quiet.read.map((m) => m.channelId)).toEqual(ids.slice(50, 50 + MAX_CHANNELS).map((n) => `c${n}`));
    expect(quiet.skipped).toBe(50);
  });

  it("an unreadable index does not stop every catch-up: it is rebuilt as channels are heard from", async () => {
    const marks = new ChannelMarks(redisStateStore(redis, prefix), "torn");
    await redis.set(key("torn", "channels"), '{"100": "9');
    expect(await marks.load(now)).toEqual([]);
    await marks.remember("100", "900", madeAgo(now, 1000));
    expect(await index("torn")).toEqual({ "100": "900" });
  });

  it("a first start (no channel yet) reads nothing", async () => {
    expect(await new ChannelMarks(redisStateStore(redis, prefix), "first").load(now)).toEqual([]);
  });

  it("an idle channel leaves the index and its mark leaves Redis", async () => {
    const marks = new ChannelMarks(redisStateStore(redis, prefix), "idle");
    await marks.remember("100", "900", madeAgo(now, DAY));
    await marks.remember("300", "900", madeAgo(now, CHANNEL_IDLE_MS + 60_000));
    expect(await redis.exists(key("idle", "last:300"))).toBe(1);
    expect((await marks.load(now)).map((m) => m.channelId)).toEqual(["100"]);
    expect(await index("idle")).toEqual({ "100": "900" });
    expect(await redis.exists(key("idle", "last:300"))).toBe(0);
    expect(await redis.get(key("idle", "last:100"))).toBe(madeAgo(now, DAY));
  });

  it("a channel whose mark is malformed or missing leaves the index", async () => {
    const marks = new ChannelMarks(redisStateStore(redis, prefix), "bad");
    for (const channel of ["100", "200", "300"]) await marks.remember(channel, undefined, madeAgo(now, DAY));
    await redis.set(key("bad", "last:200"), "not-a-snowflake");
    await redis.del(key("bad", "last:300"));
    expect((await marks.load(now)).map((m) => m.channelId)).toEqual(["100"]);
    expect(await index("bad")).toEqual({ "100": null });
    expect(await redis.exists(key("bad", "last:200"))).toBe(0);
    // Heard from again: back in the index.
    await marks.remember("200", undefined, madeAgo(now, 1000));
    expect((await marks.load(now)).map((m) => m.channelId)).toEqual(["200", "100"]);
  });

  it("a mark from the future (a forged id stored before) leaves the index: it would hold the read-back past every message", async () => {
    const real = Date.now();
    const marks = new ChannelMarks(redisStateStore(redis, prefix), "future");
    for (const channel of ["100", "200"]) await marks.remember(channel, undefined, madeAgo(real, DAY));
    await redis.set(key("future", "last:200"), madeAgo(real, -30 * DAY));
    expect((await marks.load(real)).map((m) => m.channelId)).toEqual(["100"]);
    expect(await redis.exists(key("future", "last:200"))).toBe(0);
  });
});
