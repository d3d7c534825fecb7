import type { AdapterFields, InboundResult } from "@hub/core";
import { describe, expect, it } from "vitest";
import { Albums, mergeAlbum } from "../src/albums.js";

const item = (messageId: number, extra: Partial<AdapterFields> = {}): AdapterFields => ({
  channel: "telegram",
  accountId: "default",
  messageId: String(messageId),
  chat: { type: "group", id: "-100" },
  sender: { id: "7", name: "Ann", isBot: false },
  body: "",
  wasMentioned: false,
  media: [{ kind: "image", mime: "image/jpeg", ref: `photo-${messageId}` }],
  timestamp: 1,
  ...extra,
});

describe("telegram albums", () => {
  it("merges items into the first one's identity: every file, the captions, mentioned when any item is", () => {
    const merged = mergeAlbum([
      item(12),
      item(11, { body: "look", wasMentioned: true }),
      item(13, { replyTo: { messageId: "9", body: "earlier" } }),
    ]);
    expect(merged.messageId).toBe("11");
    expect(merged.body).toBe("look");
    expect(merged.wasMentioned).toBe(true);
    expect(merged.media?.map((m) => m.ref)).toEqual(["photo-11", "photo-12", "photo-13"]);
    expect(merged.replyTo).toEqual({ messageId: "9", body: "earlier" });
  });

  it("submits an album once, when no item came for the quiet window, and every item gets its result", async () => {
    const albums = new Albums(100, 1000);
    const submitted: AdapterFields[] = [];
    const submit = async (whole: Promise<AdapterFields>): Promise<InboundResult> => {
      submitted.push(await whole);
      return { kind: "accepted" };
    };
    const results = [albums.add("c:1", item(1), submit)];
    await new Promise((r) => setTimeout(r, 60));
    results.push(albums.add("c:1", item(2), submit));
    results.push(albums.add("c:2", item(5), submit));
    expect(await Promise.all(results)).toEqual([
      { kind: "accepted" },
      { kind: "accepted" },
      { kind: "accepted" },
    ]);
    const byId = Object.fromEntries(submitted.map((f) => [f.messageId, f.media?.length]));
    expect(byId).toEqual({ "1": 2, "5": 1 });
  });

  it("takes an album whose items keep trickling in at its longest wait", async () => {
    // Items every 50 ms never leave the 250 ms quiet window: only the longest wait (300 ms) takes it.
    const albums = new Albums(250, 300);
    let taken: AdapterFields | undefined;
    const done = albums.add("c:1", item(1), async (whole) => {
      taken = await whole;
      return { kind: "accepted" };
    });
    let added = 1;
    while (!taken && added < 40) {
      await new Promise((r) => setTimeout(r, 50));
      if (!taken) void albums.add("c:1", item(++added), async () => ({ kind: "accepted" }));
    }
    await done;
    expect(added).toBeLessThan(40);
    expect(taken?.media?.length).toBeGreaterThanOrEqual(2);
    expect(taken?.media?.length).toBeLessThanOrEqual(added);
  });
});
