import { type AckLedger, type LiveFeatures, type ReactedMessage, replyIdOf } from "@hub/agent";
import { type HubLogger, type ReplySettlement, ReplyTargetSchema } from "@hub/core";
import type { RunRecords } from "@hub/sessions";
import type { Redis } from "ioredis";
import { z } from "zod";

const EntrySchema = z.object({
  at: z.number(),
  emoji: z.string(),
  message: z.object({
    channel: z.string(),
    accountId: z.string(),
    messageId: z.string(),
    replyTarget: ReplyTargetSchema,
  }),
});

/**
 * Acknowledgement reactions that are on messages, in one Redis hash (runId -> the message), from just
 * before each is put on until it is removed: a process that dies in between (its run ended, the answer
 * still being delivered) leaves the entry, and the next start removes the reaction.
 */
export class RedisAckLedger implements AckLedger {
  readonly #key: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.#key = `${prefix}:ack-reactions`;
  }

  async remember(runId: string, message: ReactedMessage, emoji: string): Promise<void> {
    await this.redis.hset(this.#key, runId, JSON.stringify({ at: Date.now(), emoji, message }));
  }

  async forget(runId: string): Promise<void> {
    await this.redis.hdel(this.#key, runId);
  }

  /** Every remembered reaction (an unreadable entry is dropped). */
  async entries(): Promise<LedgerEntry[]> {
    const raw = await this.redis.hgetall(this.#key);
    const entries: LedgerEntry[] = [];
    for (const [runId, text] of Object.entries(raw)) {
      const entry = readEntry(text);
      if (entry) entries.push({ runId, ...entry });
      else await this.forget(runId);
    }
    return entries;
  }
}

// One stored entry, or undefined when it is not JSON or not an entry's shape.
function readEntry(text: string): z.infer<typeof EntrySchema> | undefined {
  try {
    return EntrySchema.parse(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/** One remembered reaction: the run whose message it is on, when, which, and the message. */
export interface LedgerEntry {
  runId: string;
  at: number;
  emoji: string;
  message: ReactedMessage;
}

/** What removing the reactions a crash left behind needs. */
export interface LeftReactionDeps {
  ledger: RedisAckLedger;
  live: LiveFeatures;
  runs: RunRecords;
  /** The settlement of a reply (its answer delivered or given up), given up with `signal`. */
  settled(replyId: string, signal: AbortSignal): Promise<ReplySettlement>;
  runTimeoutMs: number;
  logger: HubLogger;
}

/**
 * At start: each remembered reaction whose run is over (or gone) is removed once the run's answer is
 * delivered, or after the run timeout at the latest; a run still in flight removes its own (a resumed
 * attempt puts it on again and takes it off at its end). In the background: the start does not wait.
 */
export async function removeLeftReactions(deps: LeftReactionDeps): Promise<number> {
  const left = await deps.ledger.entries();
  let removed = 0;
  await Promise.all(
    left.map(async ({ runId, at, message, emoji }) => {
      const run = await deps.runs.get(runId).catch(() => undefined);
      if (run && (run.status === "running" || run.status === "queued")) return;
      // Interrupted (finalized without resuming): its attempts' replies never settle, nothing more is posted.
      if (run && run.status !== "interrupted") {
        const replyId = replyIdOf(runId, run.attempt);
        const signal = AbortSignal.timeout(deps.runTimeoutMs);
        const waited = await deps.settled(replyId, signal).then(
          () => true,
          () => signal.aborted,
        );
        // Not settled and not timed out: Redis went away (the hub stops); the next start looks again.
        if (!waited) return;
      }
      // A channel still connecting (WhatsApp) cannot remove it yet: tried again a little later, and kept
      // for the next start if that fails too, for at most a day (a message deleted meanwhile never can).
      if (!(await removal(deps, message, emoji, runId)) && Date.now() - at < KEEP_UNREMOVED_MS) return;
      await deps.ledger.forget(runId);
      removed++;
    }),
  );
  if (removed > 0) deps.logger.info({ removed }, "removed acknowledgement reactions left by a crash");
  return removed;
}

const KEEP_UNREMOVED_MS = 24 * 3600_000;
const RETRY_REMOVAL_MS = 30_000;

// Whether the reaction came off, trying a second time after a while.
async function removal(deps: LeftReactionDeps, message: ReactedMessage, emoji: string, runId: string) {
  for (const wait of [0, RETRY_REMOVAL_MS]) {
    if (wait) await new Promise((r) => setTimeout(r, wait).unref());
    try {
      await deps.live.react(message, null, emoji);
      return true;
    } catch (error) {
      deps.logger.debug({ err: error, runId }, "a reaction left by a crash could not be removed yet");
    }
  }
  return false;
}

/**
 * `live` with its reactions remembered in Redis, and what removes those a crash left (in the background,
 * logging a failure; call it after restart recovery decided which runs resume).
 */
export function withAckLedger(
  live: LiveFeatures,
  deps: Omit<LeftReactionDeps, "ledger" | "live"> & { redis: Redis; prefix: string },
): { live: LiveFeatures; removeLeft: () => void } {
  const ledger = new RedisAckLedger(deps.redis, deps.prefix);
  const remembered = { ...live, ledger };
  const removeLeft = () =>
    void removeLeftReactions({ ...deps, ledger, live: remembered }).catch((error: unknown) =>
      deps.logger.warn({ err: error }, "could not look for reactions left by a crash"),
    );
  return { live: remembered, removeLeft };
}
