import { offlineAnswer } from "@hub/agent";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, chromiumAvailable, launchChromium } from "../support/browser.js";
import { startTestHub, type TestHub } from "../support/hub.js";

// Debian's chromium; browsers cannot be downloaded at test time here. CI installs it (.ci/run).
const available = chromiumAvailable;
if (!available)
  console.warn(
    `webchat browser test skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH).`,
  );

let hub: TestHub;
let browser: Browser;
const WRITE_ONLY = "browser-write-only-0123456789";
beforeAll(async () => {
  if (!available) return;
  hub = await startTestHub(
    {
      gateway: { clients: [{ name: "sender", token: WRITE_ONLY, scopes: ["write"] }] },
      // The offline model's words 5 ms apart: a long answer streams in parts for a few seconds.
      agent: { offlineTokenDelayMs: 5 },
    },
    "browser",
  );
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await hub?.dispose();
});

describe.skipIf(!available)("web chat in a real browser", () => {
  it("types a message, sees the streamed answer, reloads and sees the history", async () => {
    const page = await browser.newPage();
    await page.goto(`${hub.url}#token=${hub.token}`);
    await page.locator("#status[data-state=open]").waitFor();
    // The token moved from the URL into local storage, and the login form is gone.
    expect(page.url()).not.toContain("token=");
    expect(await page.locator("#login").isVisible()).toBe(false);
    await page.fill("#input", "hello from the browser");
    await page.press("#input", "Enter");
    const answer = page.locator(".msg.assistant").last();
    await expect
      .poll(async () => answer.textContent(), { timeout: 15_000 })
      .toBe(offlineAnswer("hello from the browser"));
    await expect.poll(async () => answer.getAttribute("class")).not.toContain("pending");

    await page.reload();
    await page.locator("#status[data-state=open]").waitFor();
    await expect
      .poll(async () => page.locator(".msg").allTextContents())
      .toEqual(["hello from the browser", offlineAnswer("hello from the browser")]);
    const roles = await page.locator(".msg").evaluateAll((els) => els.map((e) => e.className));
    expect(roles).toEqual(["msg user", "msg assistant"]);
    await page.close();
  });

  it("a token that may send but not read the history stays connected and sends", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${hub.url}#token=${WRITE_ONLY}`);
    await page.locator("#status[data-state=open]").waitFor();
    await expect.poll(async () => page.locator("#status").textContent()).toMatch(/cannot read the history/);
    await page.fill("#input", "sent without read");
    await page.press("#input", "Enter");
    await expect
      .poll(async () => page.locator(".msg.assistant").last().textContent(), { timeout: 15_000 })
      .toBe(offlineAnswer("sent without read"));
    expect(await page.locator("#status").getAttribute("data-state")).toBe("open");
    await context.close();
  });

  it.each([
    ["before it reaches the hub", "request"],
    ["with its acknowledgement", "response"],
  ])("a message whose connection drops %s is sent again on reconnect, and answered once", async (_, lost) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const sendIds = new Set<unknown>();
    let dropped = false;
    // Between page and gateway: the first chat.send (or the gateway's answer to it) is lost with the connection.
    await page.routeWebSocket(/.*/, (ws) => {
      const server = ws.connectToServer();
      const drop = () => {
        dropped = true;
        void ws.close();
        void server.close();
      };
      ws.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { id?: unknown; method?: string };
        if (frame.method === "chat.send") sendIds.add(frame.id);
        if (!dropped && lost === "request" && frame.method === "chat.send") return drop();
        server.send(message);
      });
      server.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { type?: string; id?: unknown };
        if (!dropped && lost === "response" && frame.type === "res" && sendIds.has(frame.id)) return drop();
        ws.send(message);
      });
    });
    await page.goto(`${hub.url}#token=${hub.token}`);
    await page.locator("#status[data-state=open]").waitFor();
    const question = `connection lost ${lost}`;
    await page.fill("#input", question);
    await page.press("#input", "Enter");
    const answer = offlineAnswer(question);
    const texts = () => page.locator(".msg").allTextContents();
    await expect
      .poll(async () => (await texts()).filter((t) => t === answer).length, { timeout: 15_000 })
      .toBe(1);
    expect(dropped).toBe(true);
    // Sent again with its idempotency key: one question, one answer, no "Not sent", and so after a reload.
    await new Promise((r) => setTimeout(r, 1000));
    const before = await texts();
    await page.reload();
    await page.locator("#status[data-state=open]").waitFor();
    await expect.poll(async () => (await texts()).includes(answer)).toBe(true);
    for (const view of [before, await texts()]) {
      expect(view.filter((t) => t === question)).toHaveLength(1);
      expect(view.filter((t) => t === answer)).toHaveLength(1);
      expect(view.filter((t) => t.startsWith("Not sent"))).toEqual([]);
    }
    await context.close();
  });

  it("an answer that ends while the page reloads its history after a reconnect stays on screen", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    let connections = 0;
    // The first connection drops at the answer's first part; on the next, the history (read while the
    // answer was still being written) reaches the page only after the answer's final event.
    await page.routeWebSocket(/.*/, (ws) => {
      const server = ws.connectToServer();
      const connection = ++connections;
      const historyIds = new Set<unknown>();
      let heldHistory: string | undefined;
      ws.onMessage((message) => {
        const frame = JSON.parse(String(message)) as { id?: unknown; method?: string };
        if (frame.method === "chat.history") historyIds.add(frame.id);
        server.send(message);
      });
      server.onMessage((message) => {
        const frame = JSON.parse(String(message)) as {
          type?: string;
          id?: unknown;
          payload?: { state?: string };
        };
        const state = frame.type === "event" ? frame.payload?.state : undefined;
        if (connection === 1 && state === "delta") {
          void ws.close();
          void server.close();
          return;
        }
        if (
          connection === 2 &&
          frame.type === "res" &&
          historyIds.has(frame.id) &&
          heldHistory === undefined
        ) {
          heldHistory = String(message);
          return;
        }
        ws.send(message);
        if (connection === 2 && state === "final" && heldHistory) ws.send(heldHistory);
      });
    });
    await page.goto(`${hub.url}#token=${hub.token}`);
    await page.locator("#status[data-state=open]").waitFor();
    // Paragraphs, so the answer (which repeats them) streams in parts over a few seconds.
    const paragraphs = Array.from(
      { length: 8 },
      (_, i) => `part ${i + 1} ${"of a long question ".repeat(30)}`,
    );
    await page.fill("#input", paragraphs.join("\n\n"));
    await page.press("#input", "Enter");
    const answers = () =>
      page
        .locator(".msg.assistant")
        .evaluateAll((els) =>
          els.map((e) => e.textContent ?? "").filter((t) => t.includes("part 1 of a long question")),
        );
    await expect.poll(async () => (await answers()).length, { timeout: 20_000 }).toBe(1);
    expect(connections).toBe(2);
    await new Promise((r) => setTimeout(r, 500));
    const [shown] = await answers();
    expect(shown).toContain("part 8 of a long question");
    expect(shown).toContain("I am the offline model");
    expect(await answers()).toHaveLength(1);
    await context.close();
  });

  it("asks for the token when it has none, and refuses a wrong one", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(hub.url);
    await page.locator("#login").waitFor({ state: "visible" });
    await page.fill("#token", "not-the-right-token");
    await page.click("#login button");
    await expect.poll(async () => page.locator("#status").textContent()).toMatch(/token/i);
    await expect.poll(async () => page.locator("#login").isVisible()).toBe(true);
    await context.close();
  });
});
