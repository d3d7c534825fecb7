import type { HubLogger } from "@hub/core";
import { loadScript, runScript } from "@hub/queue";
import type { Redis } from "ioredis";

const CLOCK = loadScript(new URL("./scripts/clock.lua", import.meta.url));

// A read of Redis's clock taken longer than this is not kept: it waited (an outage, a busy event loop) for
// an unknown part of the round trip, and its middle may be far from when Redis read its clock.
const MAX_ROUND_TRIP_MS = 100;

// Redis's clock as last read, and this process's monotonic clock at the round trip's middle; undefined until
// read. One per process (or agent thread), since every role of it shares one Redis.
let anchor: { redisMs: number; at: number } | undefined;

/**
 * The lowest generation a claim taken now may take: the time in milliseconds, on Redis's clock as this
 * process last read it (`keepGenerationClock`) carried on by its own monotonic clock (this machine's clock
 * until the first read). A claim's generation is one more than the session's last one and at least this,
 * so generations always grow, and stay above the ones a transcript already has after Redis lost its data
 * or came back with older data (a restored snapshot, the last second an AOF had not written, a replica
 * promoted behind). Readers of a transcript take a claim line with a lower generation than one before it
 * for a late one, not a claim (see `VisibleLines`). Redis's clock, not each hub's: a hub whose clock is
 * behind another's must not claim below the generations that one wrote. A whole number, which passes
 * through Lua as a double exactly.
 */
export function generationBase(): number {
  if (!anchor) return Date.now();
  return anchor.redisMs + Math.floor(performance.now() - anchor.at);
}

/**
 * Reads Redis's clock (`TIME`, on the node of the installation's keys under `prefix`) and keeps it for
 * `generationBase`, unless the round trip took too long to place the read in time. Returns how far Redis's
 * clock is ahead of this machine's (ms; negative when behind), or undefined for a read not kept.
 */
export async function readGenerationClock(redis: Redis, prefix: string): Promise<number | undefined> {
  const sent = performance.now();
  const [seconds, micros] = (await runScript(redis, CLOCK, [`${prefix}:clock`], [])) as [string, string];
  const received = performance.now();
  if (received - sent > MAX_ROUND_TRIP_MS) return undefined;
  const redisMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  anchor = { redisMs, at: (sent + received) / 2 };
  return redisMs - Date.now() + Math.round((received - sent) / 2);
}

/** A running `keepGenerationClock`. */
export interface GenerationClock {
  /** Settles when the first read is over (kept or not), or after a second: what a start waits for. */
  firstRead: Promise<void>;
  stop(): void;
}

/**
 * Reads Redis's clock now and every `everyMs` after (one command a minute by default; a second after a read
 * that failed or was not kept), so this process's claims take their generations on it (see
 * `generationBase`) whatever its own clock says or is set to. Says so when this machine's clock is a second
 * or more off Redis's (again after it was back within a second). The timer does not keep the process alive.
 * Until the first read, claims take this machine's clock: a start waits for it (`firstRead`).
 */
export function keepGenerationClock(
  redis: Redis,
  prefix: string,
  log: HubLogger,
  everyMs = 60_000,
): GenerationClock {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let warned = false;
  let firstOver = () => {};
  const firstRead = new Promise<void>((resolve) => {
    const waited = setTimeout(resolve, 1000);
    firstOver = () => {
      clearTimeout(waited);
      resolve();
    };
  });
  const next = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(read, ms);
    timer.unref();
  };
  const read = () =>
    readGenerationClock(redis, prefix)
      .finally(() => firstOver())
      .then(
        (aheadMs) => {
          if (aheadMs === undefined) return next(Math.min(1000, everyMs));
          const off = Math.abs(aheadMs) >= 1000;
          if (off && !warned)
            log.warn(
              { redisAheadMs: aheadMs },
              "this machine's clock differs from Redis's by a second or more",
            );
          warned = off;
          next(everyMs);
        },
        (error: unknown) => {
          log.debug({ err: error }, "could not read Redis's clock; reading it again in a second");
          next(Math.min(1000, everyMs));
        },
      );
  void read();
  return {
    firstRead,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
