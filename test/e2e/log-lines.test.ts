import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, REDIS_URL, testPrefix } from "../support/redis.js";

// "One JSON line per event": what a library prints with console.warn goes through the hub's log too.
const prefix = testPrefix("log-lines");
const stateDir = mkdtempSync(join(tmpdir(), "hub-log-lines-"));
afterAll(async () => {
  rmSync(stateDir, { recursive: true, force: true });
  await dropPrefix(prefix);
});

describe("a running hub's output", { timeout: 90_000 }, () => {
  it("is JSON lines only, with a library's warning among them (a password Redis does not need)", async () => {
    const password = "unneeded-redis-password-42";
    const url = new URL(REDIS_URL);
    url.password = password;
    const port = await freePort();
    const hub = await startHubProcess(
      { REDIS_URL: url.toString(), HUB_STATE_DIR: stateDir, HUB_REDIS_PREFIX: prefix },
      port,
    );
    try {
      await hub.waitForOutput(/does not require a password/);
    } finally {
      await hub.stop();
    }
    const lines = hub.output
      .join("")
      .split("\n")
      .filter(
        (l) =>
          l.trim() !== "" &&
          !l.startsWith("Gateway token") &&
          !l.startsWith("  ") &&
          !l.startsWith("Open the web chat"),
      );
    const notJson = lines.filter((l) => {
      try {
        JSON.parse(l);
        return false;
      } catch {
        return true;
      }
    });
    expect(notJson).toEqual([]);
    const warning = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => String(l.msg).includes("does not require a password"));
    expect(warning).toMatchObject({ level: 40, source: "library" });
    expect(hub.output.join("")).not.toContain(password);
  });
});
