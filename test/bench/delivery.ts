import { createLogger } from "@hub/core";
import { ReplyDispatcher } from "@hub/reply";
import { dropPrefix, testPrefix } from "../support/redis.js";
import { PhaseMeter, printCost } from "./meter.js";
import { outOfOrder, type SendKind, segmentText } from "./send-kits.js";

/** Ordered delivery through the ReplyDispatcher to the kit's fake: segments/s and order kept. */
export async function benchDelivery(
  redisUrl: string,
  targets: number,
  perTarget: number,
  kind: SendKind,
): Promise<number> {
  const kit = await kind.open();
  const prefix = testPrefix("bench-delivery");
  const { adapter } = kit;
  const dispatcher = new ReplyDispatcher({
    redisUrl,
    prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => adapter.capabilities,
  });
  const worker = dispatcher.startDelivery(() => adapter, { concurrency: 50 });
  const meter = new PhaseMeter(redisUrl);
  try {
    await meter.start();
    const replies = Array.from({ length: targets }, (_, t) => dispatcher.open(`reply-${t}`, kit.target(t)));
    await Promise.all(
      replies.map(async (reply, t) => {
        // As a run ends its reply: the last segment's push ends it (no end step, no end marker).
        for (let s = 0; s < perTarget; s++)
          await reply.push(segmentText(t, s), undefined, { last: s === perTarget - 1 });
        await reply.end();
      }),
    );
    await Promise.all(replies.map((r) => r.settled()));
    const cost = await meter.stop();
    const received = kit.received();
    const delivered = [...received.values()].reduce((n, texts) => n + texts.length, 0);
    const rate = delivered / cost.seconds;
    console.log(
      `  ordered delivery (ReplyDispatcher, 1 process, concurrency 50): ${rate.toFixed(0)} segments/s; ` +
        `${delivered} delivered, ${outOfOrder(received)} out of order`,
    );
    printCost(cost, delivered, "segment");
    return rate;
  } finally {
    meter.close();
    await worker.close();
    await dispatcher.close();
    await kit.close();
    await dropPrefix(prefix);
  }
}
