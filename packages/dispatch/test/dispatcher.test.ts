import { createLogger, parseConfig, type RunRequest } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { type AdmitToSession, InboundDispatcher, type InboundDispatcherOptions } from "../src/index.js";

const prefix = testPrefix("dispatch");
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

const config = parseConfig({
  channels: { telegram: { dmPolicy: "allowlist", allowFrom: ["42"], groups: { g1: {} } } },
});
/**
 * The session's admission step as the dispatcher sees it: mark and queue together (here: one SET NX
 * plus the list of queued requests), or nothing when `fail` says so.
 */
function admitInto(accepted: RunRequest[], fail: () => boolean = () => false): AdmitToSession {
  return async (request, dedupe) => {
    if (fail()) throw new Error("queue unavailable");
    if ((await redis.set(dedupe.key, "accepted", "EX", dedupe.ttlSeconds, "NX")) === null) return "duplicate";
    accepted.push(request);
    return "queued";
  };
}

/** A dispatcher on the test's Redis whose admission step queues into `accepted`. */
function dispatcherInto(accepted: RunRequest[], options: Partial<InboundDispatcherOptions> = {}) {
  return new InboundDispatcher({
    redis,
    prefix,
    config,
    logger: createLogger({ level: "silent" }),
    admit: admitInto(accepted),
    ...options,
  });
}

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
  it("takes a direct chat's sender bucket only (its chat bucket can never refuse), a group's both", async () => {
    const taken: string[][] = [];
    const dispatcher = new InboundDispatcher({
      redis,
      prefix,
      config,
      logger: createLogger({ level: "silent" }),
      admit: async (_request, _dedupe, buckets) => {
        taken.push(buckets.map((b) => b.key.slice(prefix.length + 1)));
        return "queued";
      },
    });
    await dispatcher.dispatchInboundMessage(fields("b-1"));
    await dispatcher.dispatchInboundMessage(
      fields("b-2", { chat: { type: "group", id: "g1" }, sender: { id: "42" }, wasMentioned: true }),
    );
    expect(taken).toEqual([
      ["tokens:sender:telegram:default:42"],
      ["tokens:sender:telegram:default:42", "tokens:chat:telegram:default:g1"],
    ]);
    // A chat limit tighter than the sender's is taken in direct chats too.
    const tight = parseConfig({
      channels: { telegram: { dmPolicy: "allowlist", allowFrom: ["42"] } },
      limits: { chatBurst: 2 },
    });
    const strict = new InboundDispatcher({
      redis,
      prefix,
      config: tight,
      logger: createLogger({ level: "silent" }),
      admit: async (_request, _dedupe, buckets) => {
        taken.push(buckets.map((b) => b.key.slice(prefix.length + 1)));
        return "queued";
      },
    });
    await strict.dispatchInboundMessage(fields("b-3"));
    expect(taken.at(-1)).toEqual(["tokens:sender:telegram:default:42", "tokens:chat:telegram:default:42"]);
  });

  it("leaves nothing behind when admission fails, so the redelivery is processed", async () => {
    const accepted: RunRequest[] = [];
    let failNext = true;
    const dispatcher = new InboundDispatcher({
      redis,
      prefix,
      config,
      logger: createLogger({ level: "silent" }),
      admit: admitInto(accepted, () => {
        const fail = failNext;
        failNext = false;
        return fail;
      }),
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
    const dispatcher = dispatcherInto(accepted);
    const group = { chat: { type: "group" as const, id: "g1" }, sender: { id: "7" } };
    expect((await dispatcher.dispatchInboundMessage(fields("g-1", group))).status).toBe("context");
    expect(
      (await dispatcher.dispatchInboundMessage(fields("g-2", { ...group, wasMentioned: true }))).status,
    ).toBe("accepted");
    expect(accepted.map((r) => Boolean(r.contextOnly))).toEqual([true, false]);
    expect(accepted[0]?.ctx.sessionKey).toBe(accepted[1]?.ctx.sessionKey);
  });

  it("admits a thread message into its chat's session when the hub ran the thread's first message there, for its own turn", async () => {
    const accepted: RunRequest[] = [];
    const dispatcher = dispatcherInto(accepted);
    const group = { chat: { type: "group" as const, id: "g1" }, sender: { id: "7" }, wasMentioned: true };
    await dispatcher.dispatchInboundMessage(fields("root-1", group));
    const chatSession = accepted[0]?.ctx.sessionKey ?? "";
    // Admission wrote the root's run record (this test's admit does not): its session is the chat's.
    await redis.hset(`${prefix}:run:${accepted[0]?.runId}`, "sessionKey", chatSession);
    await dispatcher.dispatchInboundMessage(fields("t-1", { ...group, threadId: "root-1" }));
    await dispatcher.dispatchInboundMessage(fields("t-2", { ...group, threadId: "other-root" }));
    expect(accepted.map((r) => [r.ctx.sessionKey, r.ctx.threadId, Boolean(r.ownTurn)])).toEqual([
      [chatSession, undefined, false],
      [chatSession, "root-1", true],
      [`${chatSession}:thread:other-root`, "other-root", false],
    ]);
  });

  it("runs a message answered in a thread of its own as a turn of its own (never steered elsewhere)", async () => {
    const accepted: RunRequest[] = [];
    const dispatcher = dispatcherInto(accepted);
    const group = { chat: { type: "group" as const, id: "g1" }, sender: { id: "7" }, wasMentioned: true };
    await dispatcher.dispatchInboundMessage(fields("own-1", { ...group, ownThread: true }));
    await dispatcher.dispatchInboundMessage(fields("own-2", group));
    expect(accepted.map((r) => [Boolean(r.ctx.ownThread), Boolean(r.ownTurn)])).toEqual([
      [true, true],
      [false, false],
    ]);
  });

  it("rejects a malformed message with a clear error and marks nothing", async () => {
    const dispatcher = new InboundDispatcher({
      redis,
      prefix,
      config,
      logger: createLogger({ level: "silent" }),
      admit: admitInto([]),
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
      admit: admitInto(accepted),
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

  it("drops a message of a disabled channel saying so, not calling it unconfigured", async () => {
    const accepted: RunRequest[] = [];
    const dispatcher = dispatcherInto(accepted, {
      config: parseConfig({ channels: { telegram: { enabled: false, allowFrom: ["42"] } } }),
    });
    const result = await dispatcher.dispatchInboundMessage(fields("d-1"));
    expect(result).toMatchObject({
      status: "dropped",
      reason: "channel telegram is disabled (enabled: false in the config)",
    });
    expect(accepted).toEqual([]);
  });
});
