import type { ValueNote } from "@hub/core";
import type { Redis } from "ioredis";
import { z } from "zod";
import { safeJson, TranscriptEntrySchema } from "./transcript.js";

const StagedAnswerSchema = z.object({
  /** The reply that carried the answer, queued whole (its last item pushed). */
  replyId: z.string().min(1),
  /** The answer's last step, as its transcript lines (without a writer: the settling writer tags them). */
  entries: z.array(TranscriptEntrySchema),
  /** The turn's whole text (what a client is told and the web chat's record keeps). */
  text: z.string(),
  /** Why the turn stopped, as the run's outcome records it. */
  stopReason: z.string(),
  usage: z.object({
    inputTokens: z.number().int().nonnegative(),
    outputTokens: z.number().int().nonnegative(),
  }),
  /** The run's record keeps the text (a client can ask for it again: the web chat's `chat.send` retry). */
  recordKeepsText: z.boolean().optional(),
});

// As its note stores it (JSON; read back through this schema, Redis being an edge): without the text
// when it is the answer's own (no earlier step said anything), which halves the note of most answers.
const StoredAnswerSchema = StagedAnswerSchema.extend({ text: z.string().optional() });

// The text of an answer's own lines.
const textOf = (entries: StagedAnswer["entries"]) =>
  entries.map((e) => (e.type === "assistant" ? e.text : "")).join("");

/**
 * A run's answer as its last block's push left it (see `RunRecords.answerNote`): everything its settle
 * writes and records, so that a run whose process died between that push and the settle is finished from
 * it, with no second model call and no second reply.
 */
export type StagedAnswer = z.infer<typeof StagedAnswerSchema>;

/** The note that stages `answer` at `key` for `ttlSeconds` (written by the fenced push of its last block). */
export function stagedAnswerNote(key: string, answer: StagedAnswer, ttlSeconds: number): ValueNote {
  const stored = answer.text === textOf(answer.entries) ? { ...answer, text: undefined } : answer;
  return { key, value: JSON.stringify(stored), ttlSeconds };
}

/** The answer staged at `key`, or undefined when there is none (or it cannot be read: then it is not used). */
export async function readStagedAnswer(redis: Redis, key: string): Promise<StagedAnswer | undefined> {
  const value = await redis.get(key);
  if (value === null) return undefined;
  const stored = StoredAnswerSchema.safeParse(safeJson(value));
  if (!stored.success) return undefined;
  return { ...stored.data, text: stored.data.text ?? textOf(stored.data.entries) };
}
