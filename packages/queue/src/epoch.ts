import { randomUUID } from "node:crypto";
import type { HubLogger } from "@hub/core";
import type { Redis } from "ioredis";

/**
 * Detects Redis losing its data (a restart without persistence, a flush, a
 * failover to an empty replica): a random epoch is stored at `<prefix>:epoch`
 * when the hub starts, and a missing or different value later means every
 * lease, queue and record written before is gone. The first process to notice
 * says so loudly and stores a new epoch; every process that held work from
 * before finishes it with a recorded outcome instead of waiting in silence.
 */
export class RedisEpoch {
  readonly #key: string;
  #value: string | undefined;
  #lostAt: number[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly logger: HubLogger,
  ) {
    this.#key = `${prefix}:epoch`;
  }

  /** Reads (or creates) the epoch, and checks it every `intervalMs` from now on. */
  async start(intervalMs = 2_000): Promise<void> {
    await this.redis.set(this.#key, randomUUID(), "NX");
    this.#value = (await this.redis.get(this.#key)) ?? undefined;
    this.#timer = setInterval(() => void this.check().catch(() => {}), intervalMs);
    this.#timer.unref();
  }

  /** Checks the epoch now; false when Redis lost its data since the last check. */
  async check(): Promise<boolean> {
    if (this.#value === undefined) return true;
    const now = await this.redis.get(this.#key);
    if (now === this.#value) return true;
    this.#lostAt.push(Date.now());
    if (now === null) await this.redis.set(this.#key, randomUUID(), "NX");
    this.#value = (await this.redis.get(this.#key)) ?? undefined;
    this.logger.error(
      { epochKey: this.#key },
      "REDIS LOST ITS DATA (restarted empty or flushed): queued messages, leases and run records from before are gone; runs in flight are being ended with a recorded outcome. Turn on AOF persistence (appendonly yes) to prevent this.",
    );
    return false;
  }

  /** True when a loss was detected at or after `since` (epoch ms); checks Redis first. */
  async lostSince(since: number): Promise<boolean> {
    await this.check().catch(() => {});
    return this.#lostAt.some((at) => at >= since);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
