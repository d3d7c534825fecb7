import { createLogger } from "@hub/core";
import { ReplyDispatcher } from "@hub/reply";
import { FakeChatAdapter, startFakeChatPlatform } from "../fakes/src/index.js";
import { dropPrefix, testPrefix } from "../support/redis.js";
import { PhaseMeter, printCost } from "./meter.js";

/** Ordered delivery through the ReplyDispatcher into the fake platform: segments/s and order kept. */
export async function benchDelivery(redisUrl: string, targets: number, perTarget: number): Promise<number> {
  const platform = await startFakeChatPlatform();
  const prefix = testPrefix("bench-delivery");
  const adapter = new FakeChatAdapter("fakechat", platform.url, { textLimit: 1000 });
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
    const replies = Array.from({ length: targets }, (_, t) =>
      dispatcher.open(`reply-${t}`, { channel: "fakechat", accountId: "default", chatId: `chat-${t}` }),
    );
    await Promise.all(
      replies.map(async (reply, t) => {
        // As a run ends its reply: the last segment's push ends it (no end step, no end marker).
        for (let s = 0; s < perTarget; s++)
          await reply.push(`target ${t} segment ${s}`, undefined, { last: s === perTarget - 1 });
        await reply.end();
      }),
    );
    await Promise.all(replies.map((r) => r.settled()));
    const cost = await meter.stop();
    const byChat = new Map<string, number[]>();
    for (const m of platform.messages) byChat.set(m.chatId, [...(byChat.get(m.chatId) ?? []), m.index]);
    let outOfOrder = 0;
    for (const indices of byChat.values()) outOfOrder += indices.filter((v, i) => v !== i).length;
    const rate = platform.messages.length / cost.seconds;
    console.log(
      `  ordered delivery (ReplyDispatcher, 1 process, concurrency 50): ${rate.toFixed(0)} segments/s; ` +
        `${platform.messages.length} delivered, ${outOfOrder} out of order`,
    );
    printCost(cost, platform.messages.length, "segment");
    return rate;
  } finally {
    meter.close();
    await worker.close();
    await dispatcher.close();
    await platform.close();
    await dropPrefix(prefix);
  }
}
