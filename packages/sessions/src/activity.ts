import {
  ConnectionLease,
  type QueueMode,
  QueueModeSchema,
  type RunRequest,
  sleep,
  type WriteFence,
  WriteFencedError,
} from "@hub/core";
import { loadScript, RedisLeaseStore, runScript, scanKeys, scriptWith } from "@hub/queue";
import type { Redis } from "ioredis";
import type { SessionLane } from "./lane.js";
import { RUN_RECORD_TTL_SECONDS, withRetries } from "./run-records.js";
import { requestsOf } from "./stored-requests.js";
import { writerKey } from "./writer.js";

const TAKE_STEERED = loadScript(new URL("./scripts/take-steered.lua", import.meta.url));
const TAKE_COLLECTED = loadScript(new URL("./scripts/take-collected.lua", import.meta.url));
const HAND_ON = scriptWith(new URL("./scripts/hand-on.lua", import.meta.url), "owe-drain");
const HAND_ON_ONE = scriptWith(new URL("./scripts/hand-on-one.lua", import.meta.url), "owe-drain");
const RENEW_HAND_ON = loadScript(new URL("./scripts/renew-hand-on.lua", import.meta.url));

/** How long one process may hand a run's messages on before another may (a holder that died). */
const HAND_ON_LEASE_MS = 15_000;
/** How often a process waiting to hand a run's messages on looks again. */
const HAND_ON_WAIT_MS = 50;

/**
 * How long the messages a run took from its steering stay readable after its last take: as long as their
 * own run records, so a run resumed or finalized after an outage of days still finds them.
 */
const TAKEN_TTL_MS = RUN_RECORD_TTL_SECONDS * 1000;

/** The session lane as `end` hands a run's messages on to it, in its own steps. */
export type HandOnLane = Pick<SessionLane, "pushKeys" | "wokeOnReady" | "encode">;

/**
 * Queues one message a run's end hands on (`end`'s `first`) in the session's lane, once, while this
 * process holds the run's hand-on lease (see scripts/hand-on-one.lua); else it throws and `end` starts over.
 */
export type HandOn = (request: RunRequest) => Promise<void>;

// A hand-on step refused: this process no longer holds the run's hand-on lease.
class HandOnLeaseLost extends Error {}

/** Options of a `SessionActivity`. */
export interface SessionActivityOptions {
  /** How long one process may hand a run's messages on without renewing (tests shorten it). */
  handOnLeaseMs?: number | undefined;
  /**
   * The session lane: `end` moves a run's untaken steered messages there in one step with the end of its
   * activity (see scripts/hand-on.lua).
   */
  lane: HandOnLane;
}

/**
 * What is happening in a session right now, in Redis so every process sees
 * it: the running run, messages steered into it, messages collected for the
 * next turn, and the session's queue mode. Steering happens at admission
 * (`SessionAdmission`); steering and `end` are each atomic, so a message
 * steered while its run ends is never lost: it comes back from `end` and runs
 * as a follow-up.
 */
export class SessionActivity {
  readonly #handOnLeaseMs: number;
  readonly #lane: HandOnLane;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly defaultMode: QueueMode,
    options: SessionActivityOptions,
  ) {
    this.#handOnLeaseMs = options.handOnLeaseMs ?? HAND_ON_LEASE_MS;
    this.#lane = options.lane;
  }

  #k(kind: string, id: string): string {
    return `${this.prefix}:${kind}:${id}`;
  }

  /**
   * The Redis keys of a run's steered messages and of the session's usage totals (for fused scripts; the
   * session's running run is fields `active` and `activeUntil` of its writer hash, see SessionWriters).
   */
  keysOf(sessionKey: string, runId: string): { steer: string; usage: string } {
    return {
      steer: this.#k("steer", runId),
      usage: this.#k("usage", sessionKey),
    };
  }

  /** The run executing in the session, if any. */
  async activeRun(sessionKey: string): Promise<string | undefined> {
    const [runId, until] = await this.redis.hmget(
      writerKey(this.prefix, sessionKey),
      "active",
      "activeUntil",
    );
    return runId && Number(until) > Date.now() ? runId : undefined;
  }

  /**
   * Marks a run as the session's running one, until `ttlMs` from now (in case its process dies): a
   * deadline readers compare with their clock, kept in the session's writer hash.
   */
  async begin(sessionKey: string, runId: string, ttlMs: number): Promise<void> {
    await this.redis.hset(
      writerKey(this.prefix, sessionKey),
      "active",
      runId,
      "activeUntil",
      Date.now() + ttlMs,
    );
  }

  /**
   * Ends a run's activity, moving every steered message it never took to the session's lane, in order,
   * after what `first` hands on through its `handOn` (messages the run's settle or its earlier attempts
   * took). The run stays "active" until then, so a message arriving meanwhile is steered (and handed on
   * after the earlier ones) rather than queued ahead of them. One process at a time hands a run's
   * messages on: after a Redis outage the run's settler and a process that finds the run over (its lane
   * lease ran out) can both get here. Each message is queued in a step fenced by the hand-on lease that
   * records it as handed on, so a process frozen halfway cannot queue one after a later one, nor one the
   * process that took over queued. Having lost the lease, this process starts over under it again:
   * `first` may run more than once and reads what it hands on afresh each time.
   */
  async end(sessionKey: string, runId: string, first?: (handOn: HandOn) => Promise<void>): Promise<void> {
    const all = async (lease: ConnectionLease) => {
      if (!(await this.#handing(sessionKey, runId, lease, first))) return false;
      await this.#handOnToLane(sessionKey, runId, lease);
      return true;
    };
    while (!(await this.#alone(runId, all))) {
      // Lost the lease (frozen past it): what was handed on meanwhile is not queued again.
    }
  }

  /**
   * Hands messages of a run on while it runs, through the same recorded, lease-fenced steps as its end
   * (`end`'s `first`), without ending its activity: a message the run took from its steering and could not
   * write. Recorded as handed on, so the run's end (or a finalize elsewhere) that reads the same taken
   * messages does not queue it again. Having lost the lease, `hand` runs again under it (it reads afresh).
   */
  async handOnNow(sessionKey: string, runId: string, hand: (handOn: HandOn) => Promise<void>): Promise<void> {
    while (!(await this.#alone(runId, (lease) => this.#handing(sessionKey, runId, lease, hand)))) {
      // Lost the lease (frozen past it): what was handed on meanwhile is not queued again.
    }
  }

  // What `hand` hands on, one recorded step each; false when the lease was lost midway.
  async #handing(
    sessionKey: string,
    runId: string,
    lease: ConnectionLease,
    hand: ((handOn: HandOn) => Promise<void>) | undefined,
  ): Promise<boolean> {
    try {
      await hand?.((request) => this.#handOnOne(sessionKey, runId, lease, request));
    } catch (error) {
      if (error instanceof HandOnLeaseLost) return false;
      throw error;
    }
    return true;
  }

  // Queues one message in the session's lane and records it as handed on, in one step (hand-on-one.lua),
  // unless this process lost the hand-on lease. Repeatable: a retry after a lost answer finds the message
  // handed on already.
  async #handOnOne(
    sessionKey: string,
    runId: string,
    lease: ConnectionLease,
    request: RunRequest,
  ): Promise<void> {
    const held = await this.#laneStep(
      HAND_ON_ONE,
      sessionKey,
      [lease.key, this.#k("steer", `${runId}:handed`)],
      // hand-on-one.lua's ARGV, in its order.
      (lane) => [
        lease.token,
        this.#handOnLeaseMs,
        Date.now(),
        lane.graceMs,
        sessionKey,
        lane.leaseMs,
        TAKEN_TTL_MS,
        request.runId,
        this.#lane.encode(request),
      ],
    );
    if (held === 0) throw new HandOnLeaseLost(`the hand-on lease of run ${runId} was lost`);
  }

  // Moves the run's untaken steered messages to the session's lane and ends its activity, in one step
  // (hand-on.lua), unless another process took the hand-on lease over (it hands them on then).
  // Repeatable: a retry after a lost answer finds nothing left to move.
  async #handOnToLane(sessionKey: string, runId: string, lease: ConnectionLease): Promise<void> {
    await this.#laneStep(
      HAND_ON,
      sessionKey,
      [this.#k("steer", runId), writerKey(this.prefix, sessionKey), lease.key],
      (lane) => [runId, lease.token, this.#handOnLeaseMs, Date.now(), lane.graceMs, sessionKey, lane.leaseMs],
    );
  }

  // One hand-on step (retried until Redis has it: each is repeatable), with the session lane's keys after
  // `keys`; a step that put the session on the lane's ready list says so to the lane. Returns `held`: 0
  // when the step found the hand-on lease another process's and did nothing.
  async #laneStep(
    script: string,
    sessionKey: string,
    keys: string[],
    args: (lane: ReturnType<HandOnLane["pushKeys"]>) => Array<string | number>,
  ): Promise<number> {
    const lane = this.#lane.pushKeys(sessionKey);
    const laneKeys = [lane.list, lane.sched, lane.ready, lane.own, lane.att];
    const [held, woke] = await withRetries(
      async () =>
        (await runScript(this.redis, script, [...keys, ...laneKeys], args(lane))) as [number, number],
    );
    if (woke === 1) this.#lane.wokeOnReady();
    return held;
  }

  // Runs `handOn` while this process holds the run's hand-on lease, renewed meanwhile (waiting for another
  // holder to finish; one that died on this machine is not waited out, see ConnectionLease). The lease's
  // key and token fence a step in Redis. Renewed only while it still holds this token (renew-hand-on.lua):
  // once lost, never taken again by this lease, so a step read before a freeze cannot get through.
  async #alone<T>(runId: string, handOn: (lease: ConnectionLease) => Promise<T>): Promise<T> {
    const lease = new ConnectionLease(
      new RedisLeaseStore(this.redis),
      this.#k("handing-on", runId),
      this.#handOnLeaseMs,
    );
    while (!(await lease.hold()).held) await sleep(HAND_ON_WAIT_MS);
    const renew = () =>
      runScript(this.redis, RENEW_HAND_ON, [lease.key], [lease.token, this.#handOnLeaseMs]).catch(() => 0);
    const renewal = setInterval(() => void renew(), this.#handOnLeaseMs / 3);
    renewal.unref();
    try {
      return await handOn(lease);
    } finally {
      clearInterval(renewal);
      await lease.release().catch(() => undefined);
    }
  }

  /**
   * The messages accepted for a session that no run has taken yet, beside those queued in its lane: steered
   * into its running run (not taken yet) and collected for its next turn, in order. For a history that
   * shows what was sent before its run writes it.
   */
  async waiting(sessionKey: string): Promise<RunRequest[]> {
    const running = await this.activeRun(sessionKey);
    const [steered, collected] = await Promise.all([
      running ? this.redis.lrange(this.#k("steer", running), 0, -1) : Promise.resolve([]),
      this.redis.lrange(this.#k("collect", sessionKey), 0, -1),
    ]);
    return requestsOf([...steered, ...collected]);
  }

  /** True when a message waits to be steered into the run. */
  async hasSteering(runId: string): Promise<boolean> {
    return (await this.redis.llen(this.#k("steer", runId))) > 0;
  }

  /**
   * Takes the messages steered into a run and returns every message the run took so far (these and
   * earlier ones), in order: the caller writes those its transcript lacks. Retried when the answer is
   * lost (the step can be repeated), and what it took stays readable (`readTaken`) for a resumed
   * attempt of a run killed before it wrote them. Throws `WriteFencedError` (nothing taken) once the
   * run's writer claim (`fence`) is not the session's.
   */
  async takeSteered(runId: string, fence: WriteFence): Promise<RunRequest[]> {
    const keys = [this.#k("steer", runId), this.#k("steer", `${runId}:taken`), fence.key];
    const args = [TAKEN_TTL_MS, fence.field, fence.value];
    // Retried, except when fenced: that answer is final.
    const all = await withRetries(() =>
      runScript(this.redis, TAKE_STEERED, keys, args).catch((error: unknown) => {
        if (error instanceof Error && error.message.includes("FENCED")) return "fenced" as const;
        throw error;
      }),
    );
    if (all === "fenced") throw new WriteFencedError(`taking the messages steered into run ${runId}`);
    return requestsOf(all as string[]);
  }

  /** The messages a run took from its steering so far (for its resumed attempt), in order. */
  async readTaken(runId: string): Promise<RunRequest[]> {
    return requestsOf(await this.redis.lrange(this.#k("steer", `${runId}:taken`), 0, -1));
  }

  /** The messages steered into a run after its last take that its settle moved aside to queue (in order). */
  async readSettled(runId: string): Promise<RunRequest[]> {
    return requestsOf(await this.redis.lrange(this.#k("steer", `${runId}:settled`), 0, -1));
  }

  /**
   * Takes the collected batch for a run (and lets the next batch queue its own
   * run). The batch moves to the run's own key, so a resumed run finds the
   * same batch instead of an empty one.
   */
  async takeCollected(sessionKey: string, runId: string): Promise<RunRequest[]> {
    const all = (await runScript(
      this.redis,
      TAKE_COLLECTED,
      [this.#k("collect", sessionKey), this.#k("collect-pending", sessionKey), this.#k("collected", runId)],
      [RUN_RECORD_TTL_SECONDS],
    )) as string[];
    return requestsOf(all);
  }

  /** The batch a collect run took (see `takeCollected`), without taking anything: for a finalize of that run. */
  async readCollected(runId: string): Promise<RunRequest[]> {
    return requestsOf(await this.redis.lrange(this.#k("collected", runId), 0, -1));
  }

  /** The session's queue mode (its own, or the configured default). */
  // Kept in the session's writer hash (field queueMode), which admission reads anyway.
  async queueMode(sessionKey: string): Promise<QueueMode> {
    const mode = QueueModeSchema.safeParse(
      await this.redis.hget(writerKey(this.prefix, sessionKey), "queueMode"),
    );
    return mode.success ? mode.data : this.defaultMode;
  }

  async setQueueMode(sessionKey: string, mode: QueueMode): Promise<void> {
    await this.redis.hset(writerKey(this.prefix, sessionKey), "queueMode", mode);
  }

  /**
   * Moves queue modes set before they lived in the writer hash (keys `queue-mode:<sessionKey>`) into
   * it; a mode set since (the field) wins. Once per installation (a marker key says it is done), so a
   * start does not scan the keyspace again. Returns how many were moved.
   */
  async adoptOldQueueModes(): Promise<number> {
    const done = `${this.prefix}:adopted:queue-modes`;
    if ((await this.redis.exists(done)) === 1) return 0;
    const keyPrefix = `${this.prefix}:queue-mode:`;
    const keys = await scanKeys(this.redis, `${keyPrefix}*`);
    for (const key of keys) {
      const mode = await this.redis.get(key);
      if (mode !== null)
        await this.redis.hsetnx(writerKey(this.prefix, key.slice(keyPrefix.length)), "queueMode", mode);
      await this.redis.del(key);
    }
    await this.redis.set(done, String(Date.now()));
    return keys.length;
  }

  async usage(sessionKey: string): Promise<{ inputTokens: number; outputTokens: number }> {
    const raw = await this.redis.hgetall(this.#k("usage", sessionKey));
    return { inputTokens: Number(raw.input ?? 0), outputTokens: Number(raw.output ?? 0) };
  }
}
