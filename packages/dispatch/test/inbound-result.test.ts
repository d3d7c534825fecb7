import { createLogger, parseConfig } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { admitInbound, InboundDispatcher } from "../src/index.js";

const prefix = testPrefix("inbound-result");
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

const config = parseConfig({
  channels: { examplechat: { dmPolicy: "allowlist", allowFrom: ["42"] } },
  limits: { maxAttachmentBytes: 1000 },
});
const fields = (messageId: string, extra: object = {}) => ({
  channel: "examplechat",
  messageId,
  chat: { type: "direct" as const, id: "42" },
  sender: { id: "42" },
  body: "hello",
  timestamp: Date.now(),
  ...extra,
});

function dispatcher(connection: Redis = redis): InboundDispatcher {
  return new InboundDispatcher({
    redis: connection,
    prefix,
    config,
    logger: createLogger({ level: "silent" }),
    // The session's admission step reduced to its dedupe mark (the real one also queues the run).
    admit: async (_request, dedupe) =>
      (await connection.set(dedupe.key, "accepted", "EX", dedupe.ttlSeconds, "NX")) === null
        ? "duplicate"
        : "queued",
  });
}

describe("admitInbound: one inbound result instead of thrown codes", () => {
  it("answers accepted, then duplicate for a redelivery, and ignored for a sender policy drop", async () => {
    const d = dispatcher();
    const first = await admitInbound(() => d.dispatchInboundMessage(fields("a1")));
    expect(first).toMatchObject({ kind: "accepted", runId: expect.any(String) });
    expect(await admitInbound(() => d.dispatchInboundMessage(fields("a1")))).toEqual({ kind: "duplicate" });
    const stranger = await admitInbound(() =>
      d.dispatchInboundMessage(fields("a2", { sender: { id: "7" }, chat: { type: "direct", id: "7" } })),
    );
    expect(stranger.kind).toBe("ignored");
  });

  it("answers rejected for input that can never be accepted (bad fields), ignored for an empty message", async () => {
    const d = dispatcher();
    // Empty is the sender's doing (whitespace, invisible characters), not bad input: ignored, like a message not for us.
    for (const body of ["  ", "\u200b"]) {
      const empty = await admitInbound(() => d.dispatchInboundMessage(fields(`r1${body}`, { body })));
      expect(empty).toEqual({ kind: "ignored", reason: "the message is empty" });
    }
    // An oversized attachment is not a bad message: it is admitted, and the run tells the user (media/prepare.ts).
    const big = await admitInbound(() =>
      d.dispatchInboundMessage(
        fields("r2", { media: [{ kind: "document", ref: "f", size: 5000, mime: "application/pdf" }] }),
      ),
    );
    expect(big.kind).toBe("accepted");
    const bad = await admitInbound(() => d.dispatchInboundMessage(fields("", {})));
    expect(bad.kind).toBe("rejected");
  });

  it("answers retry when Redis is unreachable (a transient failure on our side)", async () => {
    const down = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    try {
      const result = await admitInbound(() => dispatcher(down).dispatchInboundMessage(fields("t1")));
      expect(result).toEqual({ kind: "retry", reason: expect.any(String) });
    } finally {
      down.disconnect();
    }
  });
});
