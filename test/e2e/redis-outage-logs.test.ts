import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, type HubProcess, startHubProcess } from "../support/hub-process.js";
import { waitFor } from "../support/redis.js";
import { hasRedisServer, type OwnRedis, startOwnRedis } from "../support/redis-server.js";

// A Redis outage under a running hub: one clear line while it lasts, not a stack trace per connection
// per retry, and the hub works again once Redis is back.
describe.skipIf(!hasRedisServer())("a Redis outage in the hub's log", () => {
  let redis: OwnRedis;
  let hub: HubProcess;
  let port: number;
  beforeAll(async () => {
    redis = await startOwnRedis();
    port = await freePort();
    hub = await startHubProcess({ REDIS_URL: redis.url }, port);
  }, 60_000);
  afterAll(async () => {
    await hub?.kill();
    await redis?.stop();
  });

  it("says once that Redis cannot be reached, prints no stack traces, and is ready again after", async () => {
    await redis.restart({ downMs: 3000 });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, "ready again");
    const output = hub.output.join("");
    expect(output).not.toContain("Unhandled error event");
    const lines = output.split("\n").filter((l) => l.includes("cannot reach Redis"));
    expect(lines.length).toBeGreaterThanOrEqual(1);
    // Every connection fails at once, and retries every few hundred ms: still one line per 10 s.
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ component: "redis", level: 40 });
  }, 60_000);
});
