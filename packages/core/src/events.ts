import { z } from "zod";
import type { ReplyTarget } from "./msg-context.js";

/**
 * A run's progress as clients see it: `delta` for each delivered piece of the
 * answer, then exactly one of `final`, `error` or `aborted`.
 */
export const ChatEventSchema = z
  .object({
    runId: z.string().min(1),
    sessionKey: z.string().min(1),
    /** Position of this event within its run, from 0. */
    seq: z.number().int().nonnegative(),
    state: z.enum(["delta", "final", "error", "aborted"]),
    text: z.string(),
  })
  .strict();
/** One chat event of a run. */
export type ChatEvent = z.infer<typeof ChatEventSchema>;

/** How many segments of a reply reached the platform, and how many were given up. */
export interface ReplySettlement {
  total: number;
  delivered: number;
  failed: number;
}

/** Options of one `ReplyStream.push`. */
export interface ReplyPushOptions {
  /** This block is the reply's last: no more will come. */
  last?: boolean;
}

/** One reply being produced: blocks go in, in order; `end` marks that no more will come. */
export interface ReplyStream {
  readonly replyId: string;
  /**
   * Queues a block (chunked to the channel's limit) durably for ordered delivery; with a `note`
   * (only on a fenced reply), its fields are written in the same step. With `last`, the reply ends
   * with this block in the same step (`end` then has nothing left to do).
   */
  push(block: string, note?: PushNote, options?: ReplyPushOptions): Promise<void>;
  /**
   * Queues a file from the outbox as one segment in its place after the blocks pushed so far,
   * with an optional caption (the ReplyDispatcher implements it).
   */
  pushFile?(file: import("./outbox.js").OutboxFile, caption?: string): Promise<void>;
  /** No more blocks; returns how many segments the reply has. */
  end(): Promise<number>;
  /** True once the reply is ended (by its last block's push, or `end`): nothing more is queued for it. */
  readonly ended?: boolean;
  /** On a reply opened `once`: its push found it queued before (by an earlier attempt) and queued nothing. */
  readonly repeated?: boolean;
  /**
   * Resolves when every segment is delivered or failed for good. `signal` gives the wait up (it rejects
   * with the signal's reason and stops reading the reply's status); a `LightAbort` costs less than an
   * AbortSignal. A property, not a method, so that an implementation must take any StopSignal (a method's
   * parameter is checked loosely: one typed AbortSignal would compile and fail on a LightAbort).
   */
  settled: (signal?: import("./light-abort.js").StopSignal) => Promise<ReplySettlement>;
  /**
   * Shows `text` (the answer so far, not yet pushed as blocks) as the reply's live preview: one
   * message edited in place, in order with the blocks; the next block pushed becomes that message.
   * Only on a reply opened with `preview`.
   */
  preview?(text: string): Promise<void>;
}

/** A reply's live preview: which preview it continues, so a resumed attempt takes over a crashed one's. */
export interface ReplyPreviewOptions {
  /** Shared by every attempt of one run (its runId): the preview message belongs to the run. */
  key: string;
  /** A later attempt: a preview an earlier attempt left is finalized or removed even if this one shows none. */
  resumed?: boolean;
}

/**
 * A condition checked in the same atomic Redis step as a write: the write
 * happens only while hash `key` still holds `value` in `field` (a run's writer
 * generation). A process that lost its claim, frozen or not, writes nothing.
 */
export interface WriteFence {
  key: string;
  field: string;
  value: string;
}

/**
 * Hash fields written in the same atomic Redis step as a fenced push, after its fence holds: a record
 * of what was pushed (e.g. how much of a run's answer was handed to delivery) that a crash can never
 * leave behind the push, nor ahead of it.
 */
export interface HashNote {
  key: string;
  fields: Record<string, string | number>;
}

/**
 * A string value written in the same atomic Redis step as a fenced push, after its fence holds, kept for
 * `ttlSeconds`: a record of what was pushed that lives in a key of its own (e.g. a run's staged answer).
 */
export interface ValueNote {
  key: string;
  value: string;
  ttlSeconds: number;
}

/** What a fenced push may write in its own step: hash fields, or a value with a TTL. */
export type PushNote = HashNote | ValueNote;

/** A write refused by its fence: the writer no longer holds its claim. */
export class WriteFencedError extends Error {
  constructor(what: string) {
    super(`${what} refused: the writer's claim was superseded`);
    this.name = "WriteFencedError";
  }
}

/** Where runs put their replies (implemented by the ReplyDispatcher). */
export interface ReplySink {
  /** Opens a reply; with a `fence`, every push is refused (`WriteFencedError`) once the fence no longer holds. */
  open(replyId: string, target: ReplyTarget, options?: ReplyOpenOptions): ReplyStream;
}

/** Options of `ReplySink.open`. */
export interface ReplyOpenOptions {
  /** Every push is refused (`WriteFencedError`) once the fence no longer holds. */
  fence?: WriteFence | undefined;
  /** The run and session this reply answers, carried to delivery so its log lines name them. */
  runId?: string | undefined;
  sessionKey?: string | undefined;
  /** The run's live preview (a message edited in place while the answer streams), where the channel has one. */
  preview?: ReplyPreviewOptions | undefined;
  /**
   * Queued at most once per reply id, whatever retries or restarts repeat it (an unanswered run's notice,
   * the close of a preview it left): the reply is queued in one push, its last block's or `end`'s, and a
   * repeat of that push queues nothing (`repeated`). Not with a fence.
   */
  once?: boolean | undefined;
}
