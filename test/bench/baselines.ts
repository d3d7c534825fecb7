// Baselines for the ordered delivery figure: one raw BullMQ job per item (add -> process, no
// ordering) and plain HTTP sends to a fake Bot API with no queue at all.
import { performance } from "node:perf_hooks";
import { startFakeTelegram } from "@hub/fakes";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { PhaseMeter, printCost } from "./meter.js";

/** Raw BullMQ: `targets x perTarget` jobs added one by one (per target in sequence), processed at concurrency 50. */
export async function benchRawBullmq(redisUrl: string, targets: number, perTarget: number): Promise<number> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const name = `bench-raw-${process.pid}`;
  const queue = new Queue(name, { connection });
  const total = targets * perTarget;
  let done = 0;
  let finished: () => void = () => {};
  const allDone = new Promise<void>((r) => {
    finished = r;
  });
  const worker = new Worker(
    name,
    async () => {
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
    console.log(`  raw BullMQ add -> process (concurrency 50, unordered): ${rate.toFixed(0)} jobs/s`);
    printCost(cost, total, "job");
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
