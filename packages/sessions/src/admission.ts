import { type QueueMode, type RunRequest, recordedSender } from "@hub/core";
import { type ClaimedKey, runScript, scriptWith } from "@hub/queue";
import type { Redis } from "ioredis";
import { generationBase } from "./generation-clock.js";
import type { SessionLane } from "./lane.js";
import { RUN_RECORD_TTL_SECONDS, type StartedRun } from "./run-records.js";
import type { RunSteps } from "./run-steps.js";
import { writerKey } from "./writer.js";

const ADMIT = scriptWith(new URL("./scripts/admit.lua", import.meta.url), "token-bucket", "owe-drain");

/** How a message entered its session, or that it had been admitted before. */
export type AdmitOutcome = "duplicate" | "rate_limited" | "queued" | "steered" | "collected" | "interrupted";

/** A flood-limit token bucket admission takes one token from (its key, capacity and refill). */
export interface AdmissionBucket {
  key: string;
  burst: number;
  perMinute: number;
}

/**
 * Lets admission begin a run in its own step when it claims the run's idle session for this process's
 * runner (which starts it at once): the run's timeout and activity TTL, as the runner would begin it,
 * and the steps the runner's `begin` then takes the start from.
 */
export interface BeginInAdmission {
  steps: RunSteps;
  timeoutMs: number;
  activeTtlMs: number;
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
    private readonly beginHere?: BeginInAdmission,
  ) {}

  /** Admits a request; `dedupe.key` is the full Redis key of its platform message's mark. */
  async admit(
    request: RunRequest,
    dedupe: { key: string; ttlSeconds: number },
    buckets: AdmissionBucket[] = [],
  ): Promise<AdmitOutcome> {
    const kind = request.contextOnly ? "context" : request.command || request.ownTurn ? "queued" : "run";
    // This process's runner may take the session at once, in this step (no wake-up, no separate claim): this
    // thread's, or an agent thread's.
    const here = this.lane.reserveDrainHere(request.ctx.sessionKey);
    try {
      const now = Date.now();
      const [outcome, woke, ...begun] = await this.#admit(request, dedupe, buckets, {
        kind,
        now,
        token: here?.token ?? "",
        // A session claimed to wait for a runner slot is begun by its runner when it starts.
        begin: here !== undefined && !here.waits,
      });
      const { runId, ctx } = request;
      // The run begun in this step goes with the claim to the thread whose runner takes it.
      const started =
        begun.length > 0
          ? { run: { runId, sessionKey: ctx.sessionKey, channel: ctx.channel }, begun }
          : undefined;
      if (started && !here?.remote) this.beginHere?.steps.begunInAdmission(started.run, started.begun);
      if (typeof woke === "string") here?.start(ctx.sessionKey, woke, now, started);
      else if (woke === 1) this.lane.wokeOnReady();
      return outcome;
    } finally {
      here?.cancel();
    }
  }

  // The admission step itself (admit.lua): {outcome, woke}.
  async #admit(
    request: RunRequest,
    dedupe: { key: string; ttlSeconds: number },
    buckets: AdmissionBucket[],
    step: { kind: string; now: number; token: string; begin: boolean },
  ): Promise<[AdmitOutcome, number | string, ...Array<string | number>]> {
    const { runId, ctx } = request;
    const sessionKey = ctx.sessionKey;
    const k = (kind: string, id: string) => `${this.prefix}:${kind}:${id}`;
    const lane = this.lane.pushKeys(sessionKey);
    // Begun here only by a claim for this process's runner (the step decides whether it claims).
    const begin = this.beginHere && step.begin && step.kind === "run" ? this.beginHere : undefined;
    return (await runScript(
      this.redis,
      ADMIT,
      [
        dedupe.key,
        k("run", runId),
        writerKey(this.prefix, sessionKey),
        lane.list,
        lane.sched,
        lane.ready,
        k("collect", sessionKey),
        k("collect-pending", sessionKey),
        lane.own,
        lane.att,
        ...buckets.map((b) => b.key),
      ],
      [
        runId,
        sessionKey,
        step.now,
        dedupe.ttlSeconds,
        RUN_RECORD_TTL_SECONDS,
        lane.graceMs,
        this.defaultMode,
        step.kind,
        this.lane.encode(request),
        this.prefix,
        step.token,
        lane.leaseMs,
        begin?.timeoutMs ?? "",
        begin?.activeTtlMs ?? 0,
        generationBase(),
        recordedSender(runId, ctx),
        ...buckets.flatMap((b) => [b.burst, b.perMinute / 60_000]),
      ],
    )) as [AdmitOutcome, number | string, ...Array<string | number>];
  }
}

/** A run admission began in its step for an agent thread's runner, handed over with the session's claim. */
export interface BegunElsewhere {
  run: StartedRun;
  /** admit.lua's start values (see `RunSteps.begunInAdmission`). */
  begun: Array<string | number>;
}

/**
 * Runs a session an admission on another thread of this process claimed for this thread's runner (see
 * `SessionLane.addRemoteRunner`): the run that step began, noted first, is what the runner's `begin` takes.
 */
export function takeClaimedSession(claim: ClaimedKey, lane: SessionLane, steps: RunSteps): void {
  const started = claim.carry as BegunElsewhere | undefined;
  if (started) steps.begunInAdmission(started.run, started.begun);
  lane.adopt(claim);
}
