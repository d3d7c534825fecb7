import { createLogger, parseConfig, type RunRequest } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { InboundDispatcher } from "../src/index.js";

const prefix = testPrefix("dispatch");
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

const config = parseConfig({
  channels: { telegram: { dmPolicy: "allowlist", allowFrom: ["42"], groups: { g1: {} } } },
});
const fields = (messageId: string, extra: object = {}) => ({
  channel: "telegram",
  messageId,
  chat: { type: "direct" as const, id: "42" },
  sender: { id: "42" },
  body: "hello",
  timestamp: Date.now(),
  ...extra,
});

describe("InboundDispatcher", () => {
  it("releases the dedupe mark when acceptance fails, so the redelivery is processed", async () => {
    const accepted: RunRequest[] = [];
    let failNext = true;
    const dispatcher = new InboundDispatcher({
      redis,
      prefix,
      config,
      logger: createLogger({ level: "silent" }),
      accept: async (request) => {
        if (failNext) {
          failNext = false;
          throw new Error("queue unavailable");
        }
        accepted.push(request);
      },
    });
    await expect(dispatcher.dispatchInboundMessage(fields("m1"))).rejects.toThrow("queue unavailable");
    const retry = await dispatcher.dispatchInboundMessage(fields("m1"));
    expect(retry.status).toBe("accepted");
    expect(accepted).toHaveLength(1);
    expect(await redis.ttl(`${prefix}:dedupe:telegram:default:42:m1`)).toBeGreaterThanOrEqual(1200);
    expect((await dispatcher.dispatchInboundMessage(fields("m1"))).status).toBe("duplicate");
  });

  it("queues an unmentioned group message as context only, and a mentioned one as a run", async () => {
    const accepted: RunRequest[] = [];
    const dispatcher = new InboundDispatcher({
      redis,
      prefix,
      config,
      logger: createLogger({ level: "silent" }),
      accept: async (r) => void accepted.push(r),
    });
    const group = { chat: { type: "group" as const, id: "g1" }, sender: { id: "7" } };
    expect((await dispatcher.dispatchInboundMessage(fields("g-1", group))).status).toBe("context");
    expect(
      (await dispatcher.dispatchInboundMessage(fields("g-2", { ...group, wasMentioned: true }))).status,
    ).toBe("accepted");
    expect(accepted.map((r) => Boolean(r.contextOnly))).toEqual([true, false]);
    expect(accepted[0]?.ctx.sessionKey).toBe(accepted[1]?.ctx.sessionKey);
  });

  it("rejects a malformed message with a clear error and marks nothing", async () => {
    const dispatcher = new InboundDispatcher({
      redis,
      prefix,
      config,
      logger: createLogger({ level: "silent" }),
      accept: async () => {},
    });
    await expect(
      dispatcher.dispatchInboundMessage({ ...fields("bad"), chat: { type: "nope", id: "1" } } as never),
    ).rejects.toThrow(/Inbound message rejected: chat\.type/);
  });
});

describe("unpairedResponse", () => {
  it("silent: an unknown sender gets no code message, and no run", async () => {
    const notices: string[] = [];
    const accepted: RunRequest[] = [];
    const silent = parseConfig({ channels: { telegram: { unpairedResponse: "silent" } } });
    const dispatcher = new InboundDispatcher({
      redis,
      prefix,
      config: silent,
      logger: createLogger({ level: "silent" }),
      accept: async (r) => void accepted.push(r),
      notify: async (_ctx, text) => void notices.push(text),
    });
    const result = await dispatcher.dispatchInboundMessage({
      ...fields("s-1"),
      sender: { id: "999" },
      chat: { type: "direct", id: "999" },
    });
    expect(result.status).toBe("pairing");
    expect(notices).toEqual([]);
    expect(accepted).toEqual([]);
  });
});
