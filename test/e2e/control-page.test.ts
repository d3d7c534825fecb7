import { FailedDeliveries } from "@hub/reply";
import { Redis } from "ioredis";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumAvailable, launchChromium } from "../support/browser.js";
import { type FakeWorld, startFakeWorld } from "../support/hub.js";
import { REDIS_URL, waitFor } from "../support/redis.js";

// Debian's chromium, as in webchat-browser.test.ts (CI installs it).
const available = chromiumAvailable;

const HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">';
let world: FakeWorld;
let browser: Browser;
let redis: Redis;
beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  world = await startFakeWorld("control", { telegram: { allowFrom: ["1"] } });
  if (available) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await world?.dispose();
  redis.disconnect();
});

let n = 1;
const dm = (sender: string, name: string, body: string) =>
  world.hub.dispatcher!.dispatchInboundMessage({
    channel: "telegram",
    messageId: `c-${n++}`,
    chat: { type: "direct", id: sender },
    sender: { id: sender, name },
    body,
    timestamp: Date.now(),
  });
const inChat = (chatId: string) =>
  world.platform.messages.filter((m) => m.chatId === chatId).map((m) => m.text);

describe("the control API", () => {
  it("answers only the gateway token", async () => {
    expect((await fetch(`${world.hub.url}api/control/overview`)).status).toBe(401);
    const wrong = await fetch(`${world.hub.url}api/control/overview`, {
      headers: { authorization: "Bearer nope" },
    });
    expect(wrong.status).toBe(401);
    const stop = await fetch(`${world.hub.url}api/control/runs/stop`, { method: "POST", body: "{}" });
    expect(stop.status).toBe(401);
    const ok = await fetch(`${world.hub.url}api/control/overview`, {
      headers: { authorization: `Bearer ${world.hub.token}` },
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({
      queueDepths: { reply: expect.any(Number), runs: expect.any(Number) },
    });
    const unknown = await fetch(`${world.hub.url}api/control/runs/stop`, {
      method: "POST",
      headers: { authorization: `Bearer ${world.hub.token}`, "content-type": "application/json" },
      body: JSON.stringify({ runId: "no-such-run-0001" }),
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: expect.stringContaining("No run no-such-run-0001") });
    // A malformed request is told what is wrong in a sentence, not zod's list of issues as JSON text.
    const malformed = await fetch(`${world.hub.url}api/control/runs/stop`, {
      method: "POST",
      headers: { authorization: `Bearer ${world.hub.token}`, "content-type": "application/json" },
      body: JSON.stringify({ runId: 42 }),
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({
      error: expect.stringMatching(/^Bad request: runId: [^\n[{]+\.$/),
    });
    const notJson = await fetch(`${world.hub.url}api/control/runs/stop`, {
      method: "POST",
      headers: { authorization: `Bearer ${world.hub.token}`, "content-type": "application/json" },
      body: "{runId",
    });
    expect(await notJson.json()).toEqual({ error: "Bad request: the body is not JSON." });
  });
});

describe("retrying failed deliveries from the control API", () => {
  it("leaves a delivery to a channel the hub does not have listed, and says why", async () => {
    const failed = new FailedDeliveries(redis, world.hub.prefix);
    const target = { channel: "discord", accountId: "default", chatId: "42" };
    await failed.record(
      { replyId: "nowhere", index: 0, text: "for a channel not configured", target },
      new Error("x"),
    );
    const id = (await failed.list()).find((f) => f.target.channel === "discord")!.id;
    const res = await fetch(`${world.hub.url}api/control/deliveries/retry`, {
      method: "POST",
      headers: { authorization: `Bearer ${world.hub.token}`, "content-type": "application/json" },
      body: JSON.stringify({ ids: [id] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { retried: string[]; skipped: Array<{ id: string; reason: string }> };
    expect(body.retried).toEqual([]);
    expect(body.skipped).toEqual([
      { id, reason: expect.stringContaining('No channel "discord" is configured') },
    ]);
    expect((await failed.list()).map((f) => f.id)).toContain(id);
    // An empty selection retries nothing (only no selection at all means every one).
    const none = await fetch(`${world.hub.url}api/control/deliveries/retry`, {
      method: "POST",
      headers: { authorization: `Bearer ${world.hub.token}`, "content-type": "application/json" },
      body: JSON.stringify({ ids: [] }),
    });
    expect(await none.json()).toEqual({ retried: [], skipped: [] });
    // The browser test below expects only its own failed delivery.
    await redis.del(`${world.hub.prefix}:deliveries:failed`);
  });
});

describe.skipIf(!available)("the control page in a real browser", () => {
  it("shows channels, pairing, failed deliveries and sessions; approves, retries and reads a transcript", async () => {
    expect((await dm("1", "Owner", "hello control page")).status).toBe("accepted");
    await waitFor(() => inChat("1").length > 0, "the answer to the owner");
    const pairing = await dm("77", HOSTILE_NAME, "let me in");
    const code = (pairing as { code: string }).code;
    await waitFor(() => inChat("77").length === 1, "the pairing code");
    const target = { channel: "telegram", accountId: "default", chatId: "555" };
    await new FailedDeliveries(redis, world.hub.prefix).record(
      { replyId: "lost", index: 0, text: "a segment that once failed", target },
      new Error("platform answered 500"),
    );

    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push(e.message));
    await page.goto(`${world.hub.url}control.html#token=${world.hub.token}`);
    await page.locator("#status[data-state=open]").waitFor();
    expect(page.url()).not.toContain("token=");

    const channelRows = await page.locator("#channels tr").allTextContents();
    expect(channelRows.some((r) => r.startsWith("telegramdefaultconnected"))).toBe(true);
    expect(channelRows.some((r) => r.startsWith("webchatdefaultconnected"))).toBe(true);
    await expect
      .poll(() => page.locator("#pairing tr").allTextContents())
      .toContainEqual(expect.stringContaining(code));
    // The stranger's name is text on the page, never markup.
    expect(await page.locator("#pairing").textContent()).toContain(HOSTILE_NAME);
    expect(await page.locator("main img").count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();

    await page.locator("#pairing button", { hasText: "Approve" }).click();
    await expect.poll(() => page.locator("#pairing").textContent()).toContain("none");
    expect(await world.hub.dispatcher!.pairing.isApproved("telegram", "default", "77")).toBe(true);
    await waitFor(() => inChat("77").length === 2, "the approval notice");

    expect(await page.locator("#failed").textContent()).toContain("a segment that once failed");
    await page.locator("#failed button", { hasText: "Retry" }).click();
    await waitFor(() => inChat("555").includes("a segment that once failed"), "the retried segment");
    await expect.poll(() => page.locator("#failed").textContent()).toContain("none");
    // A delivery to a channel this hub does not have stays listed, and the page says why.
    await new FailedDeliveries(redis, world.hub.prefix).record(
      { replyId: "elsewhere", index: 0, text: "for discord", target: { ...target, channel: "discord" } },
      new Error("x"),
    );
    // The page reads the list every 3 s.
    await expect
      .poll(() => page.locator("#failed").textContent(), { timeout: 10_000 })
      .toContain("for discord");
    await page.locator("#failed button", { hasText: "Retry" }).click();
    await expect.poll(() => page.locator("#retry-notice").textContent()).toContain('No channel "discord"');
    expect(await page.locator("#retry-notice").isVisible()).toBe(true);
    expect(await page.locator("#failed").textContent()).toContain("for discord");
    await redis.del(`${world.hub.prefix}:deliveries:failed`);

    const ownerRow = page.locator("#sessions tr", { hasText: "telegram" }).filter({ hasText: ":1" }).first();
    await ownerRow.locator("button", { hasText: "Transcript" }).click();
    await page.locator("#transcript-panel:not([hidden])").waitFor();
    expect(await page.locator("#transcript li").allTextContents()).toContain("[user] hello control page");

    const shot = await page.screenshot({ fullPage: false });
    expect(shot.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
    expect([shot.readUInt32BE(16), shot.readUInt32BE(20)]).toEqual([1100, 900]);
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!available)("runs in flight on the control page", () => {
  it("shows a live run with its session, model and elapsed time; its Stop button ends it as aborted", async () => {
    world.model.script({ hang: true });
    const run = await dm("1", "Owner", "think about this for a long time");
    expect(run.status).toBe("accepted");
    const { runId, sessionKey } = run as { runId: string; sessionKey: string };
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push(e.message));
    await page.goto(`${world.hub.url}control#token=${world.hub.token}`);
    const row = page.locator("#runs tr", { hasText: runId });
    await row.waitFor();
    const cells = await row.locator("td").allTextContents();
    expect(cells.slice(0, 3)).toEqual([runId, sessionKey, "fake/test-model"]);
    expect(cells[3]).toMatch(/^\d+ s$/);
    await row.locator("button", { hasText: "Stop" }).click();
    await waitFor(
      async () => (await redis.hget(`${world.hub.prefix}:run:${runId}`, "status")) === "aborted",
      "the run stopped",
    );
    await expect.poll(() => page.locator("#runs").textContent()).toContain("none");
    expect(problems).toEqual([]);
    await page.close();
  });
});

// Last in this file: it leaves the owner's chat held back by a 429 for a while.
describe("the queue view (/admin/queues)", () => {
  it("shows a held-back reply target: its waiting segment, tries and delay; the data needs the token", async () => {
    const page = await fetch(`${world.hub.url}admin/queues`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Hub · queues");
    expect((await fetch(`${world.hub.url}api/control/queues`)).status).toBe(401);
    world.platform.fail({ status: 429, retryAfterSeconds: 30 });
    expect((await dm("1", "Owner", "an answer held back")).status).toBe("accepted");
    type View = {
      mailboxes: Array<{
        name: string;
        keys: Array<{
          key: string;
          depth: number;
          delayedUntil?: number;
          head: Array<{ id: string; attempts: number }>;
        }>;
      }>;
    };
    const read = async () =>
      (await (
        await fetch(`${world.hub.url}api/control/queues`, {
          headers: { authorization: `Bearer ${world.hub.token}` },
        })
      ).json()) as View;
    let held: View["mailboxes"][number]["keys"][number] | undefined;
    await waitFor(async () => {
      const reply = (await read()).mailboxes.find((m) => m.name === "reply");
      held = reply?.keys.find((k) => k.key.includes("telegram") && k.delayedUntil !== undefined);
      return held !== undefined;
    }, "the reply target held back by the 429");
    expect(held!.depth).toBeGreaterThanOrEqual(1);
    expect(held!.delayedUntil!).toBeGreaterThan(Date.now() + 10_000);
    // The answer's only segment, which also ends its reply (`#<index>$<total>`).
    expect(held!.head[0]?.id).toMatch(/#0\$1$/);
    expect((await read()).mailboxes.map((m) => m.name)).toEqual(["reply", "runs"]);
    if (!available) return;
    const tab = await browser.newPage();
    const problems: string[] = [];
    tab.on("pageerror", (e) => problems.push(e.message));
    tab.on("console", (m) => {
      if (m.type() === "error") problems.push(m.text());
    });
    await tab.goto(`${world.hub.url}admin/queues#token=${world.hub.token}`);
    await tab.locator("#status[data-state=open]").waitFor();
    const row = tab.locator("#reply tr", { hasText: held!.key });
    expect(await row.count()).toBe(1);
    expect(await row.textContent()).toContain(held!.head[0]!.id);
    expect(await tab.locator("#reply-summary").textContent()).toMatch(/^\d+ key\(s\) with items/);
    expect(problems).toEqual([]);
    await tab.close();
  });
});
