import { ChannelStatusCell, createLogger } from "@hub/core";
import { Api } from "grammy";
import { afterEach, describe, expect, it } from "vitest";
import { privateText, startFakeTelegram } from "../../../test/fakes/src/index.js";
import { waitFor } from "../../../test/support/redis.js";
import { pollUpdates } from "../src/polling.js";
import { memoryState } from "./harness.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * Polls a fresh fake Bot API until the test ends: `handle` takes each update, `onStatus` sees each status set
 * (with its details), `leaseValid` is the lease check.
 */
async function startPolling(o: {
  handle?: (raw: unknown) => void;
  onStatus?: (state: string, details: Parameters<ChannelStatusCell["set"]>[1]) => void;
  leaseValid?: () => boolean;
}) {
  const fake = await startFakeTelegram();
  const stop = new AbortController();
  const status = new ChannelStatusCell();
  const polling = pollUpdates({
    api: new Api(fake.token, { apiRoot: fake.apiRoot }),
    state: memoryState(),
    stateKey: "telegram:test:offset",
    handle: async (raw) => {
      o.handle?.(raw);
      return { kind: "accepted" };
    },
    status: {
      get: () => status.get(),
      set: (state, details) => {
        o.onStatus?.(state, details);
        status.set(state, details);
      },
    } as ChannelStatusCell,
    log: createLogger({ level: "silent" }),
    signal: stop.signal,
    pollTimeoutSeconds: 1,
    conflictBackoffMs: 1000,
    leaseValid: o.leaseValid ?? (() => true),
  });
  cleanups.push(async () => {
    stop.abort();
    await polling;
    await fake.close();
  });
  return { fake, status };
}

describe("telegram long polling", () => {
  it("whatever the loop throws, polling is shown reconnecting and starts again: it never ends silently", async () => {
    const seen: string[] = [];
    const states: string[] = [];
    let checks = 0;
    const { fake, status } = await startPolling({
      handle: (raw) => seen.push(String((raw as { message?: { text?: string } }).message?.text)),
      onStatus: (state, details) => states.push(`${state}${details?.reason ? `: ${details.reason}` : ""}`),
      // A lease check that breaks once: an error the loop itself does not expect.
      leaseValid: () => {
        checks++;
        if (checks === 1) throw new Error("lease store answered nonsense");
        return true;
      },
    });
    await waitFor(
      () => states.some((s) => s.startsWith("reconnecting: polling failed")),
      "the failure shown",
    );
    expect(states[0]).toMatch(/lease store answered nonsense.*starts again by itself/);
    fake.pushUpdate(privateText({ chatId: 5, fromId: 5, text: "after the restart" }));
    await waitFor(() => seen.includes("after the restart"), "polling going on", 10_000);
    expect(status.get().state).toBe("connected");
  }, 20_000);
  it("a webhook left set at Telegram is deleted, and polling gets the updates (it used to wait on 409 for good)", async () => {
    const seen: string[] = [];
    const { fake } = await startPolling({
      handle: (raw) => seen.push(String((raw as { message?: { text?: string } }).message?.text)),
    });
    // Left by an earlier `mode: "webhook"` run: every getUpdates answers 409 while it is set.
    await new Api(fake.token, { apiRoot: fake.apiRoot }).setWebhook(
      "https://old.example.com/telegram/webhook",
    );
    fake.pushUpdate(privateText({ chatId: 6, fromId: 6, text: "behind a stale webhook" }));
    await waitFor(() => seen.includes("behind a stale webhook"), "the update polled", 10_000);
    expect(fake.callsOf("deleteWebhook").map((c) => c.params)).toEqual([{ drop_pending_updates: false }]);
    // Set again after that: another installation's webhook, not one left over. It is not fought over.
    await new Api(fake.token, { apiRoot: fake.apiRoot }).setWebhook(
      "https://other.example.com/telegram/webhook",
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(fake.callsOf("deleteWebhook")).toHaveLength(1);
    expect(fake.webhook?.url).toBe("https://other.example.com/telegram/webhook");
  }, 20_000);
  it("a 429 whose retry_after is not a number still waits with backoff: no hot loop of getUpdates", async () => {
    const waits: number[] = [];
    const { fake } = await startPolling({
      onStatus: (_state, details) => {
        if (details?.nextRetryAt) waits.push(details.nextRetryAt - Date.now());
      },
    });
    // A misbehaving proxy in front of the Bot API: retry_after "soon" (sent as it is).
    const garbled = {
      error_code: 429,
      description: "Too Many Requests",
      retry_after: "soon" as unknown as number,
    };
    fake.failNext("getUpdates", garbled, 100);
    await new Promise((r) => setTimeout(r, 1500));
    expect(fake.callsOf("getUpdates").length).toBeLessThanOrEqual(4);
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.every((w) => Number.isFinite(w) && w > 0)).toBe(true);
  }, 20_000);
});
