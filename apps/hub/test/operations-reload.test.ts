import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureLogs, parseConfig } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { REDIS_URL } from "../../../test/support/redis.js";
import { HubOperations } from "../src/operations.js";
import { channelPlugins } from "../src/plugins.js";

const dir = mkdtempSync(join(tmpdir(), "hub-reload-"));
const redis = new Redis(REDIS_URL, { lazyConnect: true });
afterAll(() => {
  redis.disconnect();
  rmSync(dir, { recursive: true, force: true });
});

describe("SIGHUP's reload", () => {
  it("says that a channel added to the config connects only after a restart", () => {
    const { logger, lines } = captureLogs("info");
    const config = parseConfig(
      { channels: { telegram: { botToken: "1:A" } } },
      "hub.json5",
      {},
      channelPlugins,
    );
    const operations = new HubOperations(config, redis, logger);
    const path = join(dir, "hub.json5");
    writeFileSync(path, "{ channels: { telegram: { botToken: '1:A' }, slack: { botToken: 'xoxb-1' } } }");
    expect(operations.reload(path, channelPlugins)).toBe(true);
    const said = lines.map((l) => JSON.parse(l) as { level: number; msg: string; added?: string[] });
    expect(said).toContainEqual(
      expect.objectContaining({
        added: ["slack"],
        msg: "channels added to the config (slack) connect only after a restart; the reload applies access settings",
      }),
    );
    // Said again at the next reload (still not connected); not once the file is back to what it started with.
    lines.length = 0;
    expect(operations.reload(path, channelPlugins)).toBe(true);
    expect(lines.join("")).toContain("(slack) connect only after a restart");
    lines.length = 0;
    writeFileSync(path, "{ channels: { telegram: { botToken: '1:A' } } }");
    expect(operations.reload(path, channelPlugins)).toBe(true);
    expect(lines.join("")).not.toContain("connect only after a restart");
  });
});
