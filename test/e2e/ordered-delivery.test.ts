import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createLogger, type ReplyTarget } from "@hub/core";
import { ReplyDispatcher } from "@hub/reply";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeChatPlatform, startFakeChatPlatform } from "../fakes/src/index.js";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../support/redis.js";

const WORKER = fileURLToPath(new URL("./fixtures/delivery-worker.ts", import.meta.url));
const LEASE_MS = 1500;
const prefix = testPrefix("ordered");
let platform: FakeChatPlatform;
let producer: ReplyDispatcher;
const workers: ChildProcess[] = [];

async function spawnWorker(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER], {
    env: {
      ...process.env,
      PREFIX: prefix,
      REDIS_URL,
      PLATFORM_URL: platform.url,
      LEASE_MS: String(LEASE_MS),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
    child.once("exit", (code) => reject(new Error(`delivery worker exited early (${code})`)));
  });
  workers.push(child);
  return child;
}

const target = (chatId: string): ReplyTarget => ({ channel: "fakechat", accountId: "default", chatId });

/** Indices the platform received for a chat, with back-to-back repeats (the in-flight resend) folded. */
function received(chatId: string): { indices: number[]; duplicates: number; byReply: string[] } {
  const msgs = platform.messages.filter((m) => m.chatId === chatId);
  const indices: number[] = [];
  let duplicates = 0;
  let last = "";
  for (const m of msgs) {
    const id = `${m.replyId}#${m.index}`;
    if (id === last) duplicates++;
    else indices.push(m.index);
    last = id;
  }
  return { indices, duplicates, byReply: msgs.map((m) => m.replyId) };
}

beforeAll(async () => {
  platform = await startFakeChatPlatform();
  producer = new ReplyDispatcher({
    redisUrl: REDIS_URL,
    prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => ({ textLimit: 200, markdown: "plain", threads: true, typing: false, edit: false }),
  });
  await Promise.all([spawnWorker(), spawnWorker()]);
}, 30_000);

afterAll(async () => {
  for (const w of workers) w.kill("SIGKILL");
  await producer.close();
  await platform.close();
  await dropPrefix(prefix);
});

describe("ordered delivery across worker processes", () => {
  it("delivers a 10-segment reply and the replies after it in order, with two workers", async () => {
    const replies = ["r1", "r2", "r3"].map((id) => ({
      id,
      stream: producer.open(`${id}-a`, target("chat-a")),
    }));
    // More targets than one worker drains at once (20), so both workers must take part.
    const others = Array.from({ length: 24 }, (_, i) => producer.open(`other-${i}`, target(`chat-o${i}`)));
    // Interleave pushes of several replies to one target and to other targets.
    for (let n = 0; n < 10; n++) {
      await replies[0]!.stream.push(`r1 segment ${n}`);
      await Promise.all(others.map((o) => o.push(`other segment ${n}`)));
    }
    await replies[0]!.stream.end();
    for (const r of replies.slice(1)) {
      for (let n = 0; n < 3; n++) await r.stream.push(`${r.id} segment ${n}`);
      await r.stream.end();
    }
    await Promise.all(others.map((o) => o.end()));
    const settled = await Promise.all([
      ...replies.map((r) => r.stream.settled()),
      ...others.map((o) => o.settled()),
    ]);
    expect(settled[0]).toEqual({ total: 10, delivered: 10, failed: 0 });
    const a = platform.messages.filter((m) => m.chatId === "chat-a");
    expect(a.map((m) => m.text)).toEqual([
      ...Array.from({ length: 10 }, (_, n) => `r1 segment ${n}`),
      ...["r2", "r3"].flatMap((id) => [0, 1, 2].map((n) => `${id} segment ${n}`)),
    ]);
    for (let i = 0; i < others.length; i++)
      expect(received(`chat-o${i}`).indices).toEqual(Array.from({ length: 10 }, (_, n) => n));
    // Both processes took part.
    expect(new Set(platform.messages.map((m) => m.sender)).size).toBe(2);
  });

  it("a worker SIGKILLed mid-reply loses nothing: the rest arrives, in order", async () => {
    platform.setDelay(120);
    const reply = producer.open("crash-1", target("chat-crash"));
    for (let n = 0; n < 10; n++) await reply.push(`crash segment ${n}`);
    await reply.end();
    await waitFor(() => received("chat-crash").indices.length >= 3, "three segments before the kill");
    const sender = platform.messages.filter((m) => m.chatId === "chat-crash").at(-1)!.sender;
    const victim = workers.find((w) => String(w.pid) === sender)!;
    expect(victim).toBeDefined();
    victim.kill("SIGKILL");
    const settlement = await reply.settled();
    expect(settlement).toEqual({ total: 10, delivered: 10, failed: 0 });
    const got = received("chat-crash");
    expect(got.indices).toEqual(Array.from({ length: 10 }, (_, n) => n));
    // Only the segment in flight at the kill may arrive twice.
    expect(got.duplicates).toBeLessThanOrEqual(1);
    const survivors = new Set(
      platform.messages.filter((m) => m.chatId === "chat-crash").map((m) => m.sender),
    );
    expect(survivors.size).toBe(2);
    platform.setDelay(0);
  }, 30_000);

  it("a 429 with retry-after delays the whole target, then delivers in order", async () => {
    platform.fail({ status: 429, retryAfterSeconds: 1 });
    const reply = producer.open("limited-1", target("chat-limited"));
    const started = Date.now();
    for (let n = 0; n < 4; n++) await reply.push(`limited ${n}`);
    await reply.end();
    expect(await reply.settled()).toEqual({ total: 4, delivered: 4, failed: 0 });
    expect(received("chat-limited").indices).toEqual([0, 1, 2, 3]);
    expect(platform.messages.find((m) => m.chatId === "chat-limited")!.at - started).toBeGreaterThanOrEqual(
      950,
    );
  });

  it("a permanent failure (403) gives the segment up and settles the reply", async () => {
    platform.fail({ status: 403 });
    const reply = producer.open("blocked-1", target("chat-blocked"));
    await reply.push("first");
    await reply.push("second");
    await reply.end();
    expect(await reply.settled()).toEqual({ total: 2, delivered: 1, failed: 1 });
    expect(received("chat-blocked").indices).toEqual([1]);
  });
});
