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

describe("telegram long polling", () => {
  it("whatever the loop throws, polling is shown reconnecting and starts again: it never ends silently", async () => {
    const fake = await startFakeTelegram();
    const stop = new AbortController();
    const status = new ChannelStatusCell();
    const seen: string[] = [];
    const states: string[] = [];
    let checks = 0;
    const polling = pollUpdates({
      api: new Api(fake.token, { apiRoot: fake.apiRoot }),
      state: memoryState(),
      stateKey: "telegram:test:offset",
      handle: async (raw) => {
        seen.push(String((raw as { message?: { text?: string } }).message?.text));
        return { kind: "accepted" };
      },
      status: {
        get: () => status.get(),
        set: (state, details) => {
          states.push(`${state}${details?.reason ? `: ${details.reason}` : ""}`);
          status.set(state, details);
        },
      } as ChannelStatusCell,
      log: createLogger({ level: "silent" }),
      signal: stop.signal,
      pollTimeoutSeconds: 1,
      conflictBackoffMs: 1000,
      // A lease check that breaks once: an error the loop itself does not expect.
      leaseValid: () => {
        checks++;
        if (checks === 1) throw new Error("lease store answered nonsense");
        return true;
      },
    });
    cleanups.push(async () => {
      stop.abort();
      await polling;
      await fake.close();
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
  it("a 429 whose retry_after is not a number still waits with backoff: no hot loop of getUpdates", async () => {
    const fake = await startFakeTelegram();
    const stop = new AbortController();
    // A misbehaving proxy in front of the Bot API: retry_after "soon" (sent as it is).
    const garbled = {
      error_code: 429,
      description: "Too Many Requests",
      retry_after: "soon" as unknown as number,
    };
    fake.failNext("getUpdates", garbled, 100);
    const waits: number[] = [];
    const status = new ChannelStatusCell();
    const polling = pollUpdates({
      api: new Api(fake.token, { apiRoot: fake.apiRoot }),
      state: memoryState(),
      stateKey: "telegram:test:offset",
      handle: async () => ({ kind: "accepted" }),
      status: {
        get: () => status.get(),
        set: (state, details) => {
          if (details?.nextRetryAt) waits.push(details.nextRetryAt - Date.now());
          status.set(state, details);
        },
      } as ChannelStatusCell,
      log: createLogger({ level: "silent" }),
      signal: stop.signal,
      pollTimeoutSeconds: 1,
      conflictBackoffMs: 1000,
      leaseValid: () => true,
    });
    cleanups.push(async () => {
      stop.abort();
      await polling;
      await fake.close();
    });
    await new Promise((r) => setTimeout(r, 1500));
    expect(fake.callsOf("getUpdates").length).toBeLessThanOrEqual(4);
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.every((w) => Number.isFinite(w) && w > 0)).toBe(true);
  }, 20_000);
});
