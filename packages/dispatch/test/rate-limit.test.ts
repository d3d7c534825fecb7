import { createRedis } from "@hub/queue";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { RateLimiter } from "../src/rate-limit.js";

const prefix = testPrefix("rate-limit");
const redis = createRedis(REDIS_URL);
afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

describe("flood-limit token buckets", () => {
  it("a take whose clock reading is older than the bucket's last refill adds no tokens: the time is not refilled twice", async () => {
    const limiter = new RateLimiter(redis, prefix);
    // Two tokens, one a second.
    const bucket = limiter.bucket("sender:late-clock", 2, 60);
    const realNow = Date.now;
    const takeAt = async (ms: number) => {
      Date.now = () => ms;
      try {
        return await limiter.take([bucket]);
      } finally {
        Date.now = realNow;
      }
    };
    expect(await takeAt(10_000)).toBe(true);
    // Read its clock a second earlier, queued behind the first: takes the second token.
    expect(await takeAt(9_000)).toBe(true);
    // No time has passed since the first take: the bucket is empty.
    expect(await takeAt(10_000)).toBe(false);
    // A second later, one token again.
    expect(await takeAt(11_000)).toBe(true);
    expect(await takeAt(11_000)).toBe(false);
  });
});
