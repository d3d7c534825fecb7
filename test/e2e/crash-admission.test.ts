import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type FakeOpenAI,
  type FakeTelegram,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { fakeModelEnv } from "../support/hub-process.js";
import { type Installation, installation } from "../support/installation.js";
import { REDIS_URL, waitFor } from "../support/redis.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";

// Admission crash points (issue 9, items 1-5), with real hub processes killed at the exact step.
const USER = 5151;
let model: FakeOpenAI;
let redis: Redis;
const installs: Installation[] = [];
beforeAll(async () => {
  model = await startFakeOpenAI();
  redis = new Redis(REDIS_URL);
});
afterEach(async () => {
  for (const i of installs.splice(0)) await i.dispose();
});
afterAll(async () => {
  await model.close();
  redis.disconnect();
});

const modelEnv = () => fakeModelEnv(model);
const modelCallsWith = (text: string) =>
  model.requests.filter((r) => JSON.stringify(r.messages.at(-1)).includes(text)).length;

function make(name: string, config: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  const inst = installation(name, { config, env: { ...modelEnv(), ...env } });
  installs.push(inst);
  return inst;
}

describe("admission: a crash at any step gives exactly one run", () => {
  let telegram: FakeTelegram;
  beforeAll(async () => {
    telegram = await startFakeTelegram();
  });
  afterAll(async () => telegram.close());
  const answersTo = (text: string, user = USER) =>
    telegram.sent(user).filter((m) => String(m.text).includes(`echo: ${text}`)).length;

  // With an agent thread, admission's step claims the idle session for the thread's runner and begins its
  // run: killed right after it, the claim and the begun run belong to a process that is gone.
  it.each([
    ["", 0],
    [", the session claimed for an agent thread's runner", 1],
  ])(
    "killed before the admission step, then right after it%s: the redelivered update is answered once, and redeliveries spend no rate-limit token",
    async (_, threads) => {
      // A chat of its own per case (the fake Telegram is shared).
      const user = USER + threads;
      const [firstWords, secondWords] = [`first words ${threads}`, `second words ${threads}`];
      const inst = make(`adm-tg-${threads}`, {
        agent: { threads },
        channels: {
          telegram: fakeTelegramChannel(telegram, [user]),
        },
        // Three tokens and (practically) no refill: the two admissions below and one more message.
        limits: { senderBurst: 3, senderPerMinute: 1 },
      });
      const first = await inst.start({ failpoints: "admission.before-admit=kill" });
      telegram.pushUpdate(privateText({ chatId: user, fromId: user, text: firstWords }));
      await first.hub.exited;
      // Polling fetches the unconfirmed update again; this process dies just after admitting it.
      const second = await inst.start({ failpoints: "admission.after-admit=kill", wait: false });
      await second.hub.exited;
      expect(second.hub.output.join("")).toContain("failpoint admission.after-admit: kill");
      // The step claimed the session (for the thread's runner with a thread: the main thread has none) rather
      // than waking it through the ready list: the claim is what the dead process leaves behind.
      const session = `agent:main:telegram:direct:${user}`;
      expect(await redis.exists(`${inst.prefix}:mb:runs:own:${session}`)).toBe(1);
      expect(await redis.lrange(`${inst.prefix}:mb:runs:ready`, 0, -1)).toEqual([]);
      // The update comes a third time: a duplicate now, and the queued run is answered.
      await inst.start();
      await waitFor(() => answersTo(firstWords, user) === 1, "the answer to the first message", 20_000);
      telegram.pushUpdate(privateText({ chatId: user, fromId: user, text: secondWords }));
      await waitFor(() => answersTo(secondWords, user) === 1, "the answer to the second message", 20_000);
      await new Promise((r) => setTimeout(r, 1500));
      expect(answersTo(firstWords, user)).toBe(1);
      expect(modelCallsWith(firstWords)).toBe(1);
      expect(telegram.sent(user).filter((m) => String(m.text).includes("slow down"))).toEqual([]);
    },
    90_000,
  );
});

describe("chat.send: the ACK comes after admission", () => {
  it("killed after admitting but before the ACK: the client's retry finds the run, answered once", async () => {
    const inst = make("adm-ack");
    const first = await inst.start({ failpoints: "admission.after-admit=kill" });
    const sent = first.client!.fire("chat.send", {
      text: "ack me after admission",
      idempotencyKey: "crash-ack-0001",
    });
    await first.hub.exited;
    expect(first.client!.frames.filter((f) => f.type === "res" && f.id === sent)).toEqual([]);
    const { client } = await inst.start();
    const retry = await client!.request("chat.send", {
      text: "ack me after admission",
      idempotencyKey: "crash-ack-0001",
    });
    expect(retry.ok).toBe(true);
    expect(["in_flight", "completed"]).toContain((retry.payload as { status: string }).status);
    await waitFor(
      async () => (await redis.hget(`${inst.prefix}:run:crash-ack-0001`, "status")) === "completed",
      "the run to complete",
      20_000,
    );
    const again = await client!.request("chat.send", {
      text: "ack me after admission",
      idempotencyKey: "crash-ack-0001",
    });
    expect(again.payload).toMatchObject({ status: "completed", text: "echo: ack me after admission" });
    expect(modelCallsWith("ack me after admission")).toBe(1);
  }, 60_000);

  it("killed while a collected message is being admitted: the retry is answered, nothing strands", async () => {
    const inst = make("adm-collect", { agent: { queueMode: "collect" } });
    model.script({ text: "a slow first answer ".repeat(20), chunkSize: 10, delayMs: 150 });
    // The second admission (the message collected during the first run) kills the process.
    const first = await inst.start({ failpoints: "admission.before-admit=kill@2" });
    const c1 = first.client!;
    await c1.request("chat.send", { text: "collect one", idempotencyKey: "collect-run-0001" });
    await waitFor(() => modelCallsWith("collect one") === 1, "the first run to call the model");
    c1.fire("chat.send", { text: "collect two", idempotencyKey: "collect-run-0002" });
    await first.hub.exited;
    const { client } = await inst.start();
    const retry = await client!.request("chat.send", {
      text: "collect two",
      idempotencyKey: "collect-run-0002",
    });
    expect(retry.ok).toBe(true);
    await waitFor(
      () => modelCallsWith("collect two") >= 1,
      "the collected message to reach the model",
      30_000,
    );
    // Its run may end before this client's retry subscribed: the run record says how it ended.
    await waitFor(
      async () => (await redis.hget(`${inst.prefix}:run:collect-run-0002`, "status")) === "completed",
      "the collected message to be answered",
      30_000,
    );
  }, 90_000);

  it("a retry after the short-lived keys expired (a day later) answers the recorded result", async () => {
    const inst = make("adm-ttl");
    const { client } = await inst.start();
    await client!.request("chat.send", { text: "remember me", idempotencyKey: "ttl-run-0001" });
    expect(await client!.terminal("ttl-run-0001", 20_000)).toMatchObject({ state: "final" });
    await expireShortLivedKeys(inst.prefix, 24 * 3600);
    const again = await client!.request("chat.send", { text: "remember me", idempotencyKey: "ttl-run-0001" });
    expect(again.payload).toMatchObject({ status: "completed", text: "echo: remember me" });
    expect(modelCallsWith("remember me")).toBe(1);
  }, 60_000);
});

/** Deletes every key of the prefix that would have expired within `seconds` (time passing, compressed). */
async function expireShortLivedKeys(prefix: string, seconds: number): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      const ttl = await redis.ttl(key);
      if (ttl > 0 && ttl <= seconds) await redis.del(key);
    }
  } while (cursor !== "0");
}
