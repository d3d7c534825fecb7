// Baselines for the ordered delivery figure: one raw BullMQ job per item (add -> process, no
// ordering, no send), one BullMQ job per item that sends it (the fair comparison: a queue that
// delivers), and plain sends with no queue at all. Every send is the one ordered delivery makes, to a
// fake of its own (see send-kits.ts).
import { performance } from "node:perf_hooks";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { PhaseMeter, printCost } from "./meter.js";
import { type SendKind, segmentText } from "./send-kits.js";

// A send of target t's segment s, as ordered delivery sends it (reply `label-t`).
type Send = (t: number, s: number) => Promise<void>;

// A kit of `kind` and a send through its adapter; `close` stops its fake.
async function plainSend(kind: SendKind, label: string): Promise<{ send: Send; close(): Promise<void> }> {
  const kit = await kind.open();
  const send: Send = async (t, s) => {
    await kit.adapter.send({ replyId: `${label}-${t}`, index: s, text: segmentText(t, s) }, kit.target(t));
  };
  return { send, close: () => kit.close() };
}

/** Raw BullMQ: `targets x perTarget` jobs added one by one (per target in sequence), processed at concurrency 50. */
export async function benchRawBullmq(redisUrl: string, targets: number, perTarget: number): Promise<number> {
  return benchBullmq(redisUrl, targets, perTarget, undefined);
}

/**
 * The fair baseline of ordered delivery: one BullMQ job per segment (unordered), whose processor
 * sends it as ordered delivery does, at concurrency 50.
 */
export async function benchBullmqSend(
  redisUrl: string,
  targets: number,
  perTarget: number,
  kind: SendKind,
): Promise<number> {
  const plain = await plainSend(kind, "bullmq");
  try {
    return await benchBullmq(redisUrl, targets, perTarget, ({ t, s }) => plain.send(t, s));
  } finally {
    await plain.close();
  }
}

async function benchBullmq(
  redisUrl: string,
  targets: number,
  perTarget: number,
  send: ((segment: { t: number; s: number }) => Promise<void>) | undefined,
): Promise<number> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const name = `bench-${send ? "send" : "raw"}-${process.pid}`;
  const queue = new Queue(name, { connection });
  const total = targets * perTarget;
  let done = 0;
  let finished: () => void = () => {};
  const allDone = new Promise<void>((r) => {
    finished = r;
  });
  const worker = new Worker(
    name,
    async (job) => {
      if (send) await send(job.data as { t: number; s: number });
      if (++done === total) finished();
    },
    { connection: new Redis(redisUrl, { maxRetriesPerRequest: null }), concurrency: 50 },
  );
  await worker.waitUntilReady();
  const meter = new PhaseMeter(redisUrl);
  try {
    await meter.start();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: targets }, async (_, t) => {
        for (let s = 0; s < perTarget; s++)
          await queue.add("s", { t, s }, { removeOnComplete: true, removeOnFail: true });
      }),
    );
    await allDone;
    const rate = total / ((performance.now() - started) / 1000);
    const cost = await meter.stop();
    console.log(
      send
        ? `  BullMQ job per segment, each sending it (concurrency 50, unordered): ${rate.toFixed(0)} segments/s`
        : `  raw BullMQ add -> process (concurrency 50, unordered, no send): ${rate.toFixed(0)} jobs/s`,
    );
    printCost(cost, total, send ? "segment" : "job");
    return rate;
  } finally {
    meter.close();
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
  }
}

/** Plain sends (the kit's adapter to its fake), 50 at a time, no queue. */
export async function benchPlainSends(targets: number, perTarget: number, kind: SendKind): Promise<number> {
  const plain = await plainSend(kind, "plain");
  const total = targets * perTarget;
  let next = 0;
  try {
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let i = next++; i < total; i = next++) await plain.send(i % targets, Math.floor(i / targets));
      }),
    );
    const rate = total / ((performance.now() - started) / 1000);
    console.log(`  plain sends, 50 at a time, no queue: ${rate.toFixed(0)} sends/s`);
    return rate;
  } finally {
    await plain.close();
  }
}
