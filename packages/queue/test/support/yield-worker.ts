// A drain worker in its own process, for the crash tests: burst 2, one slot; each handled item is
// recorded in the Redis list `<prefix>:seen` before its ack. `HUB_FAILPOINTS` kills it at a step. With a
// third argument `push-here`, it also pushes three items to key "here" that it may drain itself (1 s lease).
import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { OrderedMailbox } from "../../src/index.js";

const [redisUrl, prefix, mode] = process.argv.slice(2) as [string, string, string | undefined];
const redis = new Redis(redisUrl);
const mailbox = new OrderedMailbox<{ n: number }>({
  name: "m",
  redisUrl,
  prefix,
  logger: createLogger({ level: "silent" }),
  parse: (raw) => raw as { n: number },
  burst: 2,
  ...(mode === "push-here" ? { leaseMs: 1000 } : {}),
});
mailbox.startWorker(
  async (item, ctx) => {
    await redis.rpush(`${prefix}:seen`, `${ctx.key}${item.data.n}`);
  },
  { concurrency: 1 },
);
process.stdout.write("worker ready\n");
if (mode === "push-here")
  await mailbox.push(
    "here",
    [0, 1, 2].map((n) => ({ id: `h${n}`, data: { n } })),
    { drainHere: true },
  );
