import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { OrderedMailbox } from "../src/index.js";

const WORKER = fileURLToPath(new URL("./support/yield-worker.ts", import.meta.url));
const prefix = testPrefix("yield-crash");
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

// Runs the worker process (test/support/yield-worker.ts) with a kill at `failpoint`; resolves when it is gone.
async function runWorkerUntilKilled(
  prefix: string,
  failpoint: string,
  ...args: string[]
): Promise<{ exit: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER, REDIS_URL, prefix, ...args], {
    env: { ...process.env, HUB_FAILPOINTS: `${failpoint}=kill` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exit = await new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_c, s) => resolve(s)));
  return { exit, stderr };
}

// The mailbox the worker process uses ("m" under this test's prefix), for this process's side.
function testMailbox(tuning: { burst?: number } = {}): OrderedMailbox<{ n: number }> {
  return new OrderedMailbox<{ n: number }>({
    name: "m",
    redisUrl: REDIS_URL,
    prefix,
    logger: createLogger({ level: "silent" }),
    parse: (raw) => raw as { n: number },
    sweepIntervalMs: 100,
    graceMs: 500,
    ...tuning,
  });
}

describe("a drainer killed right after it yielded its slot", () => {
  it("loses nothing and repeats nothing: the next worker drains both keys in order", async () => {
    const mailbox = testMailbox({ burst: 2 });
    // "busy" first on the ready list, "other" behind it: the worker's one slot takes busy, which yields
    // after two items because other waits; the process is SIGKILLed right after that step.
    await mailbox.push(
      "busy",
      Array.from({ length: 6 }, (_, n) => ({ id: `b${n}`, data: { n } })),
    );
    await mailbox.push("other", [{ id: "o0", data: { n: 0 } }]);
    const killed = await runWorkerUntilKilled(prefix, "mailbox.after-yield");
    expect(killed.exit).toBe("SIGKILL");
    expect(killed.stderr).toContain("failpoint mailbox.after-yield: kill");
    const seen = () => redis.lrange(`${prefix}:seen`, 0, -1);
    expect(await seen()).toEqual(["busy0", "busy1"]);
    const worker = mailbox.startWorker(
      async (item, ctx) => {
        await redis.rpush(`${prefix}:seen`, `${ctx.key}${item.data.n}`);
      },
      { concurrency: 1 },
    );
    await waitFor(async () => (await seen()).length >= 7, "every item handled");
    await new Promise((r) => setTimeout(r, 300));
    await worker.close();
    await mailbox.close();
    const all = await seen();
    expect(all.filter((s) => s.startsWith("busy"))).toEqual([
      "busy0",
      "busy1",
      "busy2",
      "busy3",
      "busy4",
      "busy5",
    ]);
    expect(all.filter((s) => s.startsWith("other"))).toEqual(["other0"]);
    // The waiting key went first once the slot was given up.
    expect(all[2]).toBe("other0");
  }, 30_000);

  it("a process killed right after its push claimed the key for itself: the items run once, in order, after the lease", async () => {
    const mailbox = testMailbox();
    const killed = await runWorkerUntilKilled(prefix, "mailbox.after-claim-here", "push-here");
    expect(killed.exit).toBe("SIGKILL");
    expect(killed.stderr).toContain("failpoint mailbox.after-claim-here: kill");
    // Claimed by the dead process (its lease), nothing handled yet, nothing on the ready list.
    expect(await redis.exists(`${prefix}:mb:m:own:here`)).toBe(1);
    const seen = () => redis.lrange(`${prefix}:seen`, 0, -1);
    expect((await seen()).filter((s) => s.startsWith("here"))).toEqual([]);
    const worker = mailbox.startWorker(
      async (item, ctx) => {
        await redis.rpush(`${prefix}:seen`, `${ctx.key}${item.data.n}`);
      },
      { concurrency: 1 },
    );
    await waitFor(
      async () => (await seen()).filter((s) => s.startsWith("here")).length >= 3,
      "the claimed key's items",
    );
    await new Promise((r) => setTimeout(r, 300));
    await worker.close();
    await mailbox.close();
    expect((await seen()).filter((s) => s.startsWith("here"))).toEqual(["here0", "here1", "here2"]);
  }, 30_000);
});
