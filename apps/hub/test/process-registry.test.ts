import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { REDIS_URL } from "../../../test/support/redis.js";
import { liveProcesses } from "../src/process-registry.js";

const prefix = `process-registry-${process.pid}`;
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

// The pid of a process that has exited (and was reaped): nothing runs under it now.
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid as number;
}

describe("liveProcesses", () => {
  it("leaves out and removes an entry of this machine whose process is gone; keeps live and remote ones", async () => {
    const entry = (host: string, pid: number, startedAt: number) =>
      JSON.stringify({ host, pid, roles: ["agent"], startedAt });
    const dead = await deadPid();
    await redis.set(`${prefix}:process:${hostname()}:${dead}:1`, entry(hostname(), dead, 1), "PX", 30_000);
    await redis.set(
      `${prefix}:process:${hostname()}:${process.pid}:2`,
      entry(hostname(), process.pid, 2),
      "PX",
      30_000,
    );
    await redis.set(`${prefix}:process:elsewhere:${dead}:3`, entry("elsewhere", dead, 3), "PX", 30_000);
    const listed = await liveProcesses(redis, prefix);
    expect(listed.map((p) => [p.host, p.pid])).toEqual([
      [hostname(), process.pid],
      ["elsewhere", dead],
    ]);
    expect(await redis.exists(`${prefix}:process:${hostname()}:${dead}:1`)).toBe(0);
  });
});
