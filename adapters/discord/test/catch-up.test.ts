import { memoryStateStore } from "@hub/fakes";
import { describe, expect, it } from "vitest";
import { CHANNEL_IDLE_MS, ChannelMarks, snowflakeAt, snowflakeTime } from "../src/catch-up.js";

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
});
