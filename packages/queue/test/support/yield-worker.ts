// A drain worker in its own process, for the yield crash test: burst 2, one slot; each handled item is
// recorded in the Redis list `<prefix>:seen` before its ack. `HUB_FAILPOINTS` kills it at a step.
import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { OrderedMailbox } from "../../src/index.js";

const [redisUrl, prefix] = process.argv.slice(2) as [string, string];
const redis = new Redis(redisUrl);
const mailbox = new OrderedMailbox<{ n: number }>({
  name: "m",
  redisUrl,
  prefix,
  logger: createLogger({ level: "silent" }),
  parse: (raw) => raw as { n: number },
  burst: 2,
});
mailbox.startWorker(
  async (item, ctx) => {
    await redis.rpush(`${prefix}:seen`, `${ctx.key}${item.data.n}`);
  },
  { concurrency: 1 },
);
process.stdout.write("worker ready\n");
