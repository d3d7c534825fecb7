import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/src/index.js";
import { REDIS_URL } from "./redis.js";

/** What a test file of real hub processes shares: a fake model, a Redis client, and cleanups after each test. */
export interface ProcessSuite {
  /** The fake OpenAI-compatible model (started before the file's tests, closed after them). */
  readonly model: FakeOpenAI;
  readonly redis: Redis;
  /** Run after each test, last added first (kill a process, remove its state, drop its keys). */
  readonly cleanups: Array<() => Promise<void> | void>;
}

/** Registers the file's hooks: a fake model and a Redis client for all its tests, its cleanups after each. */
export function processSuite(): ProcessSuite {
  let model: FakeOpenAI | undefined;
  let redis: Redis | undefined;
  const cleanups: Array<() => Promise<void> | void> = [];
  beforeAll(async () => {
    model = await startFakeOpenAI();
    redis = new Redis(REDIS_URL);
  });
  afterEach(async () => {
    // Every cleanup runs, even after one that fails; the first failure is reported.
    const failures: unknown[] = [];
    for (const c of cleanups.splice(0).reverse())
      await Promise.resolve()
        .then(c)
        .catch((e) => failures.push(e));
    if (failures.length > 0) throw failures[0];
  });
  afterAll(async () => {
    await model?.close();
    redis?.disconnect();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("processSuite: used before its beforeAll ran");
    return value;
  };
  return {
    get model() {
      return started(model);
    },
    get redis() {
      return started(redis);
    },
    cleanups,
  };
}
