import { performance } from "node:perf_hooks";
import { createLogger } from "@hub/core";
import { ReplyDispatcher } from "@hub/reply";
import { FakeChatAdapter, startFakeChatPlatform } from "../fakes/src/index.js";
import { dropPrefix, REDIS_URL, testPrefix } from "../support/redis.js";

/** Ordered delivery through the ReplyDispatcher into the fake platform: segments/s and order kept. */
export async function benchDelivery(): Promise<void> {
  const targets = Number(process.env.BENCH_TARGETS ?? 500);
  const perTarget = Number(process.env.BENCH_SEGMENTS ?? 10);
  const platform = await startFakeChatPlatform();
  const prefix = testPrefix("bench-delivery");
  const adapter = new FakeChatAdapter("fakechat", platform.url, { textLimit: 1000 });
  const dispatcher = new ReplyDispatcher({
    redisUrl: REDIS_URL,
    prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => adapter.capabilities,
  });
  const worker = dispatcher.startDelivery(() => adapter, { concurrency: 50 });
  try {
    const started = performance.now();
    const replies = Array.from({ length: targets }, (_, t) =>
      dispatcher.open(`reply-${t}`, { channel: "fakechat", accountId: "default", chatId: `chat-${t}` }),
    );
    await Promise.all(
      replies.map(async (reply, t) => {
        for (let s = 0; s < perTarget; s++) await reply.push(`target ${t} segment ${s}`);
        await reply.end();
      }),
    );
    await Promise.all(replies.map((r) => r.settled()));
    const seconds = (performance.now() - started) / 1000;
    const byChat = new Map<string, number[]>();
    for (const m of platform.messages) byChat.set(m.chatId, [...(byChat.get(m.chatId) ?? []), m.index]);
    let outOfOrder = 0;
    for (const indices of byChat.values()) outOfOrder += indices.filter((v, i) => v !== i).length;
    console.log(
      `ordered delivery, 1 process, ${targets} targets x ${perTarget} segments, fake platform on loopback:`,
    );
    console.log(
      `  ${(platform.messages.length / seconds).toFixed(0)} segments/s; ${platform.messages.length} delivered, ${outOfOrder} out of order`,
    );
  } finally {
    await worker.close();
    await dispatcher.close();
    await platform.close();
    await dropPrefix(prefix);
  }
}
