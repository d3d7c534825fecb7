import type { QueueMode, RunRequest } from "@hub/core";
import { runScript, tokenBucketScript } from "@hub/queue";
import type { Redis } from "ioredis";
import type { SessionLane } from "./lane.js";
import { RUN_RECORD_TTL_SECONDS } from "./run-records.js";
import { writerKey } from "./writer.js";

const ADMIT = tokenBucketScript(new URL("./scripts/admit.lua", import.meta.url));

/** How a message entered its session, or that it had been admitted before. */
export type AdmitOutcome = "duplicate" | "rate_limited" | "queued" | "steered" | "collected" | "interrupted";

/** A flood-limit token bucket admission takes one token from (its key, capacity and refill). */
export interface AdmissionBucket {
  key: string;
  burst: number;
  perMinute: number;
}

/**
 * Admission into a session in one atomic Redis step: the platform message's
 * dedupe mark, the run record (which is also the `chat.send` idempotency
 * record), and the queue-mode decision (lane item, steering, collected batch,
 * interrupt) are written together or not at all, after one token is taken
 * from each flood-limit bucket (a known message takes none). A crash before the step
 * leaves nothing (the platform's redelivery is admitted); a crash after it
 * leaves a complete admission (the redelivery is a duplicate).
 */
export class SessionAdmission {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly lane: SessionLane,
    private readonly defaultMode: QueueMode,
  ) {}

  /** Admits a request; `dedupe.key` is the full Redis key of its platform message's mark. */
  async admit(
    request: RunRequest,
    dedupe: { key: string; ttlSeconds: number },
    buckets: AdmissionBucket[] = [],
  ): Promise<AdmitOutcome> {
    const { runId, ctx } = request;
    const sessionKey = ctx.sessionKey;
    const k = (kind: string, id: string) => `${this.prefix}:${kind}:${id}`;
    const lane = this.lane.pushKeys(sessionKey);
    const kind = request.contextOnly ? "context" : request.command ? "queued" : "run";
    const [outcome] = (await runScript(
      this.redis,
      ADMIT,
      [
        dedupe.key,
        k("run", runId),
        writerKey(this.prefix, sessionKey),
        k("queue-mode", sessionKey),
        lane.list,
        lane.sched,
        lane.ready,
        k("collect", sessionKey),
        k("collect-pending", sessionKey),
        ...buckets.map((b) => b.key),
      ],
      [
        runId,
        sessionKey,
        Date.now(),
        dedupe.ttlSeconds,
        RUN_RECORD_TTL_SECONDS,
        lane.graceMs,
        this.defaultMode,
        kind,
        this.lane.encode(request),
        this.lane.encode({ runId, ctx, collect: true }),
        JSON.stringify(request),
        this.prefix,
        ...buckets.flatMap((b) => [b.burst, b.perMinute / 60_000]),
      ],
    )) as [AdmitOutcome, number];
    return outcome;
  }
}
