import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const stateDir = mkdtempSync(join(tmpdir(), "hub-channels-cli-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const hub = (...args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", MAIN, ...args], {
    env: { ...process.env, HUB_STATE_DIR: stateDir, HUB_LOG_LEVEL: "silent" },
    encoding: "utf8",
    timeout: 30_000,
  });

describe("hub channels", () => {
  it("explains its usage, and which channels link a device", () => {
    const usage = hub("channels");
    expect(usage.status).toBe(1);
    expect(usage.stderr).toContain("login [options] <channel>");
    expect(hub("channels", "login", "--help").stdout).toContain("--phone <number>");
    const telegram = hub("channels", "login", "telegram");
    expect(telegram.status).toBe(1);
    expect(telegram.stderr).toContain(
      '"telegram" has no interactive login (channels linked by a device: whatsapp)',
    );
    const account = hub("channels", "login", "whatsapp", "--account", "shop");
    expect(account.stderr).toContain("channels.whatsapp.accounts.shop is not in the config.");
  }, 120_000);

  it("refuses a phone number it cannot use before connecting anywhere", () => {
    const bad = hub("channels", "login", "whatsapp", "--phone", "call-me-maybe");
    expect(bad.status).toBe(1);
    expect(bad.stdout).not.toContain("Connecting to WhatsApp");
    expect(bad.stderr).toContain("is not a phone number; give it with the country code");
  }, 120_000);
});
