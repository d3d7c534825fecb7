import { offlineAnswer } from "@hub/agent";
import type { Browser, Locator } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumAvailable, launchChromium } from "../support/browser.js";
import { startTestHub, type TestHub } from "../support/hub.js";

// Debian's chromium, as in webchat-browser.test.ts (CI installs it).
const available = chromiumAvailable;

let hub: TestHub;
let browser: Browser;
beforeAll(async () => {
  if (!available) return;
  hub = await startTestHub({}, "markdown");
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await hub?.dispose();
});

/** Width and height from a PNG's IHDR chunk. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** The text a reader sees: without the hidden markdown markers. */
function shown(locator: Locator): Promise<string[]> {
  return locator.evaluateAll((els) =>
    els.map((el) => {
      const copy = el.cloneNode(true) as Element;
      const markers = copy.querySelectorAll(".md-syntax");
      for (let i = 0; i < markers.length; i++) markers.item(i).remove();
      return copy.textContent ?? "";
    }),
  );
}

const HOSTILE = [
  '**bold** and `code` <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>',
  "[safe](https://example.com/a) [evil](javascript:window.__pwned=3) <b>not bold</b>",
  "- one",
  "- _two_",
].join("\n");

describe.skipIf(!available)("web chat markdown in a real browser", () => {
  it("renders the agent's markdown (bold, code, lists, safe links) and never the HTML in it; the user's text stays plain", async () => {
    const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push(e.message));
    await page.goto(`${hub.url}#token=${hub.token}`);
    await page.locator("#status[data-state=open]").waitFor();
    await page.fill("#input", HOSTILE);
    await page.press("#input", "Enter");
    const answer = page.locator(".msg.assistant").last();
    // Rendering keeps every character: the bubble's text is exactly the markdown the agent wrote.
    await expect.poll(async () => answer.textContent(), { timeout: 15_000 }).toBe(offlineAnswer(HOSTILE));
    await expect.poll(async () => answer.getAttribute("class")).not.toContain("pending");

    expect((await shown(answer.locator("strong").first()))[0]).toBe("bold");
    expect((await shown(answer.locator("code").first()))[0]).toBe("code");
    expect((await shown(answer.locator("em").first()))[0]).toBe("two");
    expect(await shown(answer.locator("ul > li"))).toEqual(["one", "two"]);
    const links = await answer.locator("a").evaluateAll((as) =>
      as.map((a) => ({
        href: (a as HTMLAnchorElement).href,
        rel: (a as HTMLAnchorElement).rel,
        text: a.textContent,
      })),
    );
    expect(links).toEqual([
      {
        href: "https://example.com/a",
        rel: "noopener noreferrer nofollow",
        text: "[safe](https://example.com/a)",
      },
    ]);
    // The HTML in the model's output is text, not elements; nothing ran.
    expect(await page.locator("#messages img, #messages script, #messages b").count()).toBe(0);
    expect((await shown(answer))[0]).toContain('<img src=x onerror="window.__pwned=1">');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    // The user's own message is shown as typed, not rendered.
    const mine = page.locator(".msg.user").last();
    expect(await mine.textContent()).toBe(HOSTILE);
    expect(await mine.locator("strong").count()).toBe(0);

    const shot = await page.screenshot();
    expect(pngSize(shot)).toEqual({ width: 900, height: 700 });
    expect(problems).toEqual([]);
    await page.close();
  });
});
