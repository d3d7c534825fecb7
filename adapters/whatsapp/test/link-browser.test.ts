import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@hub/core";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumAvailable, launchChromium } from "../../../test/support/browser.js";
import { startTestHub, type TestHub } from "../../../test/support/hub.js";
import { publishLinkCode, readLinkCode, WhatsAppAdapter } from "../src/index.js";
import { FakeWhatsApp } from "./fake-whatsapp.js";

// Debian's chromium (the web chat's browser test needs it too; CI installs it).
const available = chromiumAvailable;

const QR = "2@k1VvLzQF0x9vW1b2E3n4T5m6Y7u8I9o0P,bXlOb2lzZUtleQ==,aWRlbnRpdHlLZXk=,YWR2U2VjcmV0";
const dir = mkdtempSync(join(tmpdir(), "wa-link-page-"));
const wa = new FakeWhatsApp();
let hub: TestHub;
let browser: Browser;

beforeAll(async () => {
  if (!available) return;
  wa.linked = false;
  const adapter = new WhatsAppAdapter({
    connector: wa,
    logger: createLogger({ level: "silent" }),
    linkPollMs: 50,
    pendingLink: () => readLinkCode(dir),
  });
  hub = await startTestHub({ channels: { whatsapp: { allowFrom: ["1@s.whatsapp.net"] } } }, "wa-link-page", [
    adapter,
  ]);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await hub?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!available)("the owner's web chat while WhatsApp is being linked", () => {
  it("shows the login's QR code, then the pairing code, and hides them once linked", async () => {
    const page = await browser.newPage();
    await page.goto(`${hub.url}#token=${hub.token}`);
    await page.locator("#status[data-state=open]").waitFor();
    expect(await page.locator("#link").isVisible()).toBe(false);
    await publishLinkCode(dir, { qr: QR });
    await page.locator("#link-qr").waitFor({ state: "visible", timeout: 10_000 });
    expect(await page.locator("#link-title").textContent()).toBe("Link whatsapp (default)");
    expect(
      await page.locator("#link-qr").evaluate((img: HTMLImageElement) => img.naturalWidth),
    ).toBeGreaterThan(100);
    if (process.env.HUB_SCREENSHOT) await page.screenshot({ path: process.env.HUB_SCREENSHOT });
    await publishLinkCode(dir, { pairingCode: "ABCD1234" });
    await expect
      .poll(() => page.locator("#link-code").textContent(), { timeout: 10_000 })
      .toBe("Pairing code: ABCD-1234");
    await publishLinkCode(dir, undefined);
    wa.linked = true;
    await page.locator("#link").waitFor({ state: "hidden", timeout: 10_000 });
    await page.close();
  }, 30_000);
});
