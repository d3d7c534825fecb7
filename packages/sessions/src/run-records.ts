import type { Redis } from "ioredis";
import { z } from "zod";

/** Terminal and non-terminal states of a run record. */
export const RunRecordStatusSchema = z.enum([
  "running",
  "completed",
  "aborted",
  "superseded",
  "failed",
  "timed_out",
  "interrupted",
]);

const RunRecordSchema = z.object({
  runId: z.string(),
  sessionKey: z.string(),
  status: RunRecordStatusSchema,
  attempt: z.coerce.number().int(),
  startedAt: z.coerce.number(),
  endedAt: z.coerce.number().optional(),
  text: z.string().optional(),
  error: z.string().optional(),
});
/** What the hub durably knows about one run: its state and, once over, its result. */
export type RunRecord = z.infer<typeof RunRecordSchema>;

const RECORD_TTL_SECONDS = 7 * 24 * 3600;

/**
 * Run records in Redis (`<prefix>:run:<runId>`), readable from every process:
 * the gateway answers a repeated `chat.send` with them, and a run's terminal
 * outcome is written here before anyone is told.
 */
export class RunRecords {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  #key(runId: string): string {
    return `${this.prefix}:run:${runId}`;
  }

  /** Marks a run as running; returns which attempt this is (1 the first time). */
  async start(runId: string, sessionKey: string): Promise<number> {
    const key = this.#key(runId);
    const [[, attempt]] = (await this.redis
      .multi()
      .hincrby(key, "attempt", 1)
      .hset(key, { runId, sessionKey, status: "running", startedAt: Date.now() })
      .expire(key, RECORD_TTL_SECONDS)
      .exec()) as [[null, number]];
    return attempt;
  }

  /** The record of a run, or undefined if there is none. */
  async get(runId: string): Promise<RunRecord | undefined> {
    const raw = await this.redis.hgetall(this.#key(runId));
    if (!raw.runId) return undefined;
    return RunRecordSchema.parse(raw);
  }

  /**
   * Persists a run's terminal outcome, retrying until Redis has it: nothing
   * may announce the end of a run before this resolves.
   */
  async finish(
    runId: string,
    outcome: { status: Exclude<RunRecord["status"], "running">; text?: string; error?: string },
  ): Promise<void> {
    const fields: Record<string, string | number> = { status: outcome.status, endedAt: Date.now() };
    if (outcome.text !== undefined) fields.text = outcome.text;
    if (outcome.error !== undefined) fields.error = outcome.error;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.redis
          .multi()
          .hset(this.#key(runId), fields)
          .expire(this.#key(runId), RECORD_TTL_SECONDS)
          .exec();
        return;
      } catch (error) {
        if (attempt >= 10) throw error;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  }
}

/** True when a status is terminal (the run is over). */
export function isTerminal(status: RunRecord["status"]): boolean {
  return status !== "running";
}
