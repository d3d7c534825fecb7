import type { HashNote } from "@hub/core";
import type { Redis } from "ioredis";
import { z } from "zod";
import { safeJson, TranscriptEntrySchema } from "./transcript.js";

/**
 * A run's answer as its last block's push left it (see `RunRecords.answerNote`): everything its settle
 * writes and records, so that a run whose process died between that push and the settle is finished from
 * it, with no second model call and no second reply.
 */
export interface StagedAnswer {
  /** The reply that carried the answer, queued whole (its last item pushed). */
  replyId: string;
  /** The answer's last step, as its transcript lines (without a writer: the settling writer tags them). */
  entries: z.infer<typeof TranscriptEntrySchema>[];
  /** The turn's whole text (what a client is told and the web chat's record keeps). */
  text: string;
  /** Why the turn stopped, as the run's outcome records it. */
  stopReason: string;
  usage: { inputTokens: number; outputTokens: number };
}

// The hash as the push's note writes it; read back through this schema (Redis is an edge).
const StagedAnswerFieldsSchema = z.object({
  replyId: z.string().min(1),
  entries: z.string(),
  text: z.string(),
  stopReason: z.string(),
  inputTokens: z.coerce.number().int().nonnegative(),
  outputTokens: z.coerce.number().int().nonnegative(),
});

/** The note that stages `answer` at `key` for `ttlSeconds` (written by the fenced push of its last block). */
export function stagedAnswerNote(key: string, answer: StagedAnswer, ttlSeconds: number): HashNote {
  return {
    key,
    fields: {
      replyId: answer.replyId,
      entries: JSON.stringify(answer.entries),
      text: answer.text,
      stopReason: answer.stopReason,
      inputTokens: answer.usage.inputTokens,
      outputTokens: answer.usage.outputTokens,
    },
    ttlSeconds,
  };
}

/** The answer staged at `key`, or undefined when there is none (or it cannot be read: then it is not used). */
export async function readStagedAnswer(redis: Redis, key: string): Promise<StagedAnswer | undefined> {
  const fields = StagedAnswerFieldsSchema.safeParse(await redis.hgetall(key));
  if (!fields.success) return undefined;
  const { replyId, text, stopReason, inputTokens, outputTokens } = fields.data;
  const entries = TranscriptEntrySchema.array().safeParse(safeJson(fields.data.entries));
  if (!entries.success) return undefined;
  return { replyId, entries: entries.data, text, stopReason, usage: { inputTokens, outputTokens } };
}
