import type { HubLogger } from "@hub/core";
import type { Redis } from "ioredis";

// How far Redis's clock is ahead of this process's (ms; negative when behind), as last read. Zero until
// read: on one machine the two are the same clock. One value per process (or agent thread), since every
// role of it shares one Redis.
let redisAheadMs = 0;

/**
 * The lowest generation a claim taken now may take: the time in milliseconds, on Redis's clock as this
 * process last read it (`keepGenerationClock`). A claim's generation is one more than the session's last
 * one and at least this, so generations always grow, and stay above the ones a transcript already has
 * after Redis lost its data or came back with older data (a restored snapshot, the last second an AOF had
 * not written, a replica promoted behind). Readers of a transcript take a claim line with a lower
 * generation than one before it for a late one, not a claim (see `VisibleLines`). Redis's clock, not each
 * hub's: a hub whose clock is behind another's must not claim below the generations that one wrote.
 * A generation passes through Lua as a double, exact far beyond 13 digits.
 */
export function generationBase(): number {
  return Date.now() + redisAheadMs;
}

/**
 * Reads Redis's clock (`TIME`) once and keeps how far it is from this process's, the round trip's middle
 * taken for the moment Redis read it. Returns that offset (ms).
 */
export async function readGenerationClock(redis: Redis): Promise<number> {
  const sent = Date.now();
  const [seconds, micros] = await redis.time();
  const received = Date.now();
  const redisMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  redisAheadMs = redisMs - Math.round((sent + received) / 2);
  return redisAheadMs;
}

/** A running `keepGenerationClock`. */
export interface GenerationClock {
  stop(): void;
}

/**
 * Reads Redis's clock now and every `everyMs` after (one command a minute by default), so this process's
 * claims take their generations on it (see `generationBase`) even when its own clock is off or is set
 * while it runs. A failed read keeps the last offset (a warning when it is the first); the timer does not
 * keep the process alive.
 */
export function keepGenerationClock(redis: Redis, log: HubLogger, everyMs = 60_000): GenerationClock {
  let read = false;
  const update = () =>
    readGenerationClock(redis).then(
      (aheadMs) => {
        if (!read && Math.abs(aheadMs) >= 1000)
          log.warn(
            { redisAheadMs: aheadMs },
            "this machine's clock differs from Redis's by a second or more",
          );
        read = true;
      },
      (error: unknown) => {
        if (!read)
          log.warn({ err: error }, "could not read Redis's clock; claims use this machine's until it can");
      },
    );
  void update();
  const timer = setInterval(update, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
