import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeTelegram, privateText, startFakeTelegram } from "../fakes/src/index.js";
import { type Installation, installation } from "../support/installation.js";
import { waitFor } from "../support/redis.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";

// Scale-out (issue 16): two ingress processes of one installation never poll one bot. The lease in
// Redis gives polling to one of them; the other waits (reconnecting, naming the holder) and takes
// over within the lease when the holder is killed.
let telegram: FakeTelegram;
const installs: Installation[] = [];
beforeAll(async () => {
  telegram = await startFakeTelegram();
});
afterEach(async () => {
  for (const i of installs.splice(0)) await i.dispose();
});
afterAll(async () => {
  await telegram.close();
});

type ChannelsStatus = {
  payload: {
    channels: Array<{ channel: string; status: { state: string; reason?: string; standby?: boolean } }>;
  };
};

/** getUpdates calls whose time on the wire overlapped another's (two pollers at once). */
function overlappingPolls(t: FakeTelegram): number {
  const polls = t
    .callsOf("getUpdates")
    .map((c) => ({ from: c.at, to: c.answeredAt ?? Date.now() }))
    .sort((a, b) => a.from - b.from);
  let overlaps = 0;
  for (let i = 1; i < polls.length; i++) if ((polls[i]?.from ?? 0) < (polls[i - 1]?.to ?? 0)) overlaps++;
  return overlaps;
}

describe("Telegram polling is held by one hub process at a time", () => {
  it("a second process waits naming the holder; SIGKILL the holder and the other answers the next message once", async () => {
    const leaseMs = 2000;
    const chat = 8801;
    const inst = installation("single-poller", {
      config: {
        channels: {
          telegram: fakeTelegramChannel(telegram, [chat], { leaseMs }),
        },
      },
    });
    installs.push(inst);
    const first = await inst.start();
    await telegram.waitForCall("getUpdates", () => true, 20_000);
    const second = await inst.start();
    const statusOf = async () =>
      ((await second.client!.request("channels.status")) as unknown as ChannelsStatus).payload.channels.find(
        (c) => c.channel === "telegram",
      )?.status;
    await waitFor(
      async () => (await statusOf())?.state === "reconnecting",
      "the second process waiting",
      10_000,
    );
    expect((await statusOf())?.reason).toMatch(
      new RegExp(
        `another hub process \\(\\S+ pid ${first.hub.child.pid}\\) holds this Telegram bot's polling`,
      ),
    );
    // A standby serves the installation as well as the holder: ready (a health check keeps it in service).
    expect((await statusOf())?.standby).toBe(true);
    const ready = await fetch(`http://127.0.0.1:${second.port}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { ready: true, reasons: [] }]);

    telegram.pushUpdate(privateText({ chatId: chat, fromId: chat, text: "before the crash", messageId: 11 }));
    await waitFor(() => telegram.sent(chat).length === 1, "the holder's answer", 20_000);
    // Several leases later the waiting process still has not polled: one poller, no 409.
    await new Promise((r) => setTimeout(r, leaseMs * 2));
    const pollersBefore = new Set(telegram.callsOf("getUpdates").map((c) => c.remotePort));
    expect(pollersBefore.size).toBe(1);

    const killedAt = Date.now();
    await first.hub.kill();
    telegram.pushUpdate(privateText({ chatId: chat, fromId: chat, text: "after the crash", messageId: 12 }));
    await waitFor(() => telegram.sent(chat).length >= 2, "the other process's answer", 20_000);
    const tookOver = telegram.callsOf("getUpdates").find((c) => c.at > killedAt)?.at ?? Number.NaN;
    // Within the lease (plus one renewal period of the waiting process and a start-up margin).
    expect(tookOver - killedAt).toBeLessThan(leaseMs + leaseMs / 3 + 1500);
    await new Promise((r) => setTimeout(r, 1000));
    const texts = telegram.sent(chat).map((m) => String(m.text));
    expect(texts).toHaveLength(2);
    expect(texts[1]).toMatch(/after the crash/);
    expect(telegram.calls.filter((c) => c.error_code === 409)).toEqual([]);
    expect(overlappingPolls(telegram)).toBe(0);
    // A long poll lasts at most half the lease: a holder frozen mid-poll has no poll open when another polls.
    expect(new Set(telegram.callsOf("getUpdates").map((c) => c.params.timeout))).toEqual(new Set([1]));
    await waitFor(
      async () => (await statusOf())?.state === "connected",
      "the second process connected",
      5000,
    );
  }, 90_000);

  it("a draining holder hands polling over at once: the standby answers while the holder finishes its run", async () => {
    const leaseMs = 2000;
    const [slowChat, otherChat] = [8811, 8812];
    const inst = installation("drain-handover", {
      config: {
        // A slow answer keeps the holder draining for seconds.
        agent: { offlineTokenDelayMs: 150 },
        lifecycle: { drainSeconds: 30 },
        channels: { telegram: fakeTelegramChannel(telegram, [slowChat, otherChat], { leaseMs }) },
      },
    });
    installs.push(inst);
    const first = await inst.start();
    await telegram.waitForCall("getUpdates", () => true, 20_000);
    const second = await inst.start();
    telegram.pushUpdate(
      privateText({ chatId: slowChat, fromId: slowChat, text: "take your time", messageId: 21 }),
    );
    await telegram.waitForCall("sendChatAction", (c) => Number(c.params.chat_id) === slowChat, 20_000);
    const exited = first.hub.exited.then(() => Date.now());
    const holderPorts = new Set(telegram.callsOf("getUpdates").map((c) => c.remotePort));
    const stoppedAt = Date.now();
    first.hub.child.kill("SIGTERM");
    await first.hub.waitForOutput(/draining/);
    telegram.pushUpdate(
      privateText({ chatId: otherChat, fromId: otherChat, text: "anyone there?", messageId: 22 }),
    );
    // The standby took the message while the holder was still finishing its slow run.
    const taken = await telegram.waitForCall(
      "getUpdates",
      (c) => c.at > stoppedAt && !holderPorts.has(c.remotePort),
      20_000,
    );
    await waitFor(() => telegram.sent(otherChat).length === 1, "the standby's answer", 30_000);
    expect(taken.at).toBeLessThan(await exited);
    expect(first.hub.child.exitCode).toBe(0);
    expect(telegram.sent(slowChat).map((m) => String(m.text))).toEqual([
      expect.stringMatching(/take your time/),
    ]);
    expect(telegram.sent(otherChat)[0]?.text).toMatch(/anyone there/);
    expect(first.hub.output.join("")).toContain("telegram polling handed over");
    expect(telegram.calls.filter((c) => c.error_code === 409)).toEqual([]);
    expect(overlappingPolls(telegram)).toBe(0);
    void second;
  }, 90_000);
});
