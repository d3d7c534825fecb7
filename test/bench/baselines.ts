// Baselines for the ordered delivery figure: one raw BullMQ job per item (add -> process, no
// ordering, no send), one BullMQ job per item that sends it over plain HTTP to a fake Bot API (the
// fair comparison: a queue that delivers), and plain HTTP sends to a fake Bot API with no queue at all.
import { performance } from "node:perf_hooks";
import { startFakeTelegram } from "@hub/fakes";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { PhaseMeter, printCost } from "./meter.js";

/** Raw BullMQ: `targets x perTarget` jobs added one by one (per target in sequence), processed at concurrency 50. */
export async function benchRawBullmq(redisUrl: string, targets: number, perTarget: number): Promise<number> {
  return benchBullmq(redisUrl, targets, perTarget, undefined);
}

/**
 * The fair baseline of ordered delivery: one BullMQ job per segment (unordered), whose processor
 * sends it to a fake Bot API over plain HTTP, like the plain HTTP baseline, at concurrency 50.
 */
export async function benchBullmqSend(redisUrl: string, targets: number, perTarget: number): Promise<number> {
  const fake = await startFakeTelegram();
  const url = `${fake.apiRoot}/bot${fake.token}/sendMessage`;
  try {
    return await benchBullmq(redisUrl, targets, perTarget, async ({ t, s }) => {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chat_id: 1000 + t, text: `target ${t} segment ${s}` }),
      });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`the fake Bot API answered ${res.status}`);
    });
  } finally {
    await fake.close();
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
        ? `  BullMQ job per segment, each sending it over plain HTTP to the fake Bot API (concurrency 50, unordered): ${rate.toFixed(0)} segments/s`
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

/** Plain HTTP sendMessage calls to a fake Bot API, 50 at a time, no queue. */
export async function benchPlainHttp(targets: number, perTarget: number): Promise<number> {
  const fake = await startFakeTelegram();
  const url = `${fake.apiRoot}/bot${fake.token}/sendMessage`;
  const total = targets * perTarget;
  let next = 0;
  try {
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let i = next++; i < total; i = next++) {
          const res = await fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ chat_id: 1000 + (i % targets), text: `segment ${i}` }),
          });
          await res.arrayBuffer();
        }
      }),
    );
    const rate = total / ((performance.now() - started) / 1000);
    console.log(`  plain HTTP sends to the fake Bot API (50 at a time): ${rate.toFixed(0)} sends/s`);
    return rate;
  } finally {
    await fake.close();
  }
}
