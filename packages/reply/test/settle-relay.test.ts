import { MessageChannel } from "node:worker_threads";
import type { ReplySettlement, ReplyTarget } from "@hub/core";
import { type ClaimedKey, mailboxBase, WorkerRoom } from "@hub/queue";
import { afterAll, describe, expect, it } from "vitest";
import {
  FakeChatAdapter,
  type FakeChatPlatform,
  startFakeChatPlatform,
} from "../../../test/fakes/src/index.js";
import { monitorRedis } from "../../../test/support/monitor.js";
import { dropPrefix, testPrefix, waitFor } from "../../../test/support/redis.js";
import type { ReplyDispatcher } from "../src/index.js";
import { plainTextDispatcher } from "./dispatcher-kit.js";

// An agent thread's dispatcher and the main thread's, as a hub with `agent.threads` has them: the thread's
// pushes claim targets for the main thread's delivery, and the main thread tells the thread the settlements
// of the replies it waits for, through a real message port, instead of publishing them through Redis.
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

type ToThread = { replyId: string; settlement: ReplySettlement };
type ToMain = { claim: ClaimedKey } | { waiting: string } | { done: string };

async function twoThreads(name: string, o: { waitsLateMs?: number } = {}) {
  const prefix = testPrefix(name);
  const platform: FakeChatPlatform = await startFakeChatPlatform();
  const main = plainTextDispatcher(prefix);
  const adapter = new FakeChatAdapter("fakechat", platform.url);
  const worker = main.startDelivery((channel) => (channel === "fakechat" ? adapter : undefined), {
    concurrency: 4,
    shared: true,
  });
  const toMain = new MessageChannel();
  const toThread = new MessageChannel();
  let thread: ReplyDispatcher | undefined;
  // As the main thread's handle of an agent thread keeps them (apps/hub/src/agent-thread-handle.ts).
  const tells = new Map<string, (settlement: ReplySettlement) => void>();
  const waits = (m: { waiting: string } | { done: string }) => {
    if ("done" in m) {
      const tell = tells.get(m.done);
      tells.delete(m.done);
      if (tell) main.stopWaitingElsewhere(m.done, tell);
      return;
    }
    const replyId = m.waiting;
    const tell = (settlement: ReplySettlement) => {
      tells.delete(replyId);
      toThread.port1.postMessage({ replyId, settlement });
    };
    tells.set(replyId, tell);
    main.waitElsewhere(replyId, tell);
  };
  toMain.port2.on("message", (m: ToMain) => {
    if ("claim" in m) return main.adopt(m.claim);
    // Heard late (in order): the main thread's delivery may settle the reply before it hears of the wait.
    if (o.waitsLateMs) setTimeout(() => waits(m), o.waitsLateMs);
    else waits(m);
  });
  // The settlements told through the port.
  const told: string[] = [];
  toThread.port2.on("message", (m: ToThread) => {
    told.push(m.replyId);
    thread?.settledElsewhere(m.replyId, m.settlement);
  });
  const post = (m: ToMain) => toMain.port1.postMessage(m);
  thread = plainTextDispatcher(prefix, {
    remoteDelivery: {
      room: new WorkerRoom(main.deliveryRoom),
      claimed: (claim) => post({ claim }),
    },
    settleRelay: {
      waiting: (replyId) => post({ waiting: replyId }),
      done: (replyId) => post({ done: replyId }),
    },
  });
  // The settlements published through Redis.
  const published: string[] = [];
  const monitor = await monitorRedis();
  monitor.on("monitor", (_time, [command, channel, message]) => {
    if (command?.toLowerCase() === "publish" && channel === `${mailboxBase(prefix, "reply")}:settled`)
      published.push(message ?? "");
  });
  cleanups.push(async () => {
    monitor.disconnect();
    toMain.port1.close();
    toThread.port1.close();
    await worker.close();
    await thread?.close();
    await main.close();
    await platform.close();
    await dropPrefix(prefix);
  });
  const texts = (chatId: string) => platform.messages.filter((m) => m.chatId === chatId).map((m) => m.text);
  return { main, thread, published, told, texts };
}

const target = (chatId: string): ReplyTarget => ({ channel: "fakechat", accountId: "default", chatId });

describe("a reply's settlement told to the agent thread waiting for it (SettleRelay)", () => {
  it("is told through the port, not published through Redis; nothing is left waiting", async () => {
    const t = await twoThreads("settle-relay");
    for (const n of [1, 2, 3]) {
      const reply = t.thread.open(`relayed-${n}`, target(`chat-${n}`));
      await reply.push(`first ${n}`);
      await reply.push(`last ${n}`, undefined, { last: true });
      expect(await reply.settled()).toEqual({ total: 2, delivered: 2, failed: 0 });
      expect(t.texts(`chat-${n}`)).toEqual([`first ${n}`, `last ${n}`]);
    }
    // MONITOR's lines come on a connection of their own: long enough for one to have come.
    await new Promise((r) => setTimeout(r, 300));
    expect(t.published).toEqual([]);
    expect(t.told).toEqual(["relayed-1", "relayed-2", "relayed-3"]);
    expect(t.main.waitingElsewhere).toBe(0);
  });

  it("comes through Redis when the delivering thread settled it before it heard of the wait; the wait is then forgotten there", async () => {
    const t = await twoThreads("settle-relay-late", { waitsLateMs: 300 });
    // The first push claims the idle target for the main thread's delivery (the claim is heard at once);
    // the last one finds it drained there already.
    const reply = t.thread.open("late", target("late"));
    await reply.push("first");
    await reply.push("last", undefined, { last: true });
    expect(await reply.settled()).toEqual({ total: 2, delivered: 2, failed: 0 });
    expect(t.texts("late")).toEqual(["first", "last"]);
    // MONITOR's line may come after the subscriber's message.
    await waitFor(() => t.published.length === 1, "the settlement published");
    // The late "waiting", then the "done" the settlement through Redis made: nothing stays, nothing told.
    await new Promise((r) => setTimeout(r, 400));
    expect(t.main.waitingElsewhere).toBe(0);
    expect(t.told).toEqual([]);
  });

  it("tells every thread waiting for one reply (each agent thread's start checks the same replies)", async () => {
    const t = await twoThreads("settle-relay-two");
    // A second thread waits for the same reply, and a third gave up on it.
    const second: ReplySettlement[] = [];
    t.main.waitElsewhere("shared", (settlement) => second.push(settlement));
    const gaveUp = () => expect.unreachable("a wait that ended was told");
    t.main.waitElsewhere("shared", gaveUp);
    t.main.stopWaitingElsewhere("shared", gaveUp);
    const reply = t.thread.open("shared", target("shared"));
    await reply.push("to all", undefined, { last: true });
    const settlement = { total: 1, delivered: 1, failed: 0 };
    expect(await reply.settled()).toEqual(settlement);
    await waitFor(() => second.length === 1, "the second thread told");
    expect(second).toMatchObject([settlement]);
    expect(t.told).toEqual(["shared"]);
    expect(t.main.waitingElsewhere).toBe(0);
  });
});
