import { z } from "zod";

const ToolCallSchema = z.object({ id: z.string(), name: z.string(), arguments: z.string() }).strict();

/**
 * The writer claim (`<runId>#<generation>`) a line was written under. Readers
 * drop a line whose claim is not the one announced by the latest `writer` line
 * before it: a superseded run's late append is ignored by every reader.
 */
const writer = z.string().optional();

/** One line of a session's JSONL transcript. */
export const TranscriptEntrySchema = z.discriminatedUnion("type", [
  z
    .object({ type: z.literal("session"), sessionId: z.string(), sessionKey: z.string(), at: z.number() })
    .strict(),
  z
    .object({
      type: z.literal("user"),
      writer,
      runId: z.string().optional(),
      messageId: z.string().optional(),
      senderId: z.string().optional(),
      senderName: z.string().optional(),
      /** Kept as context only (an unmentioned group message): no run answered it. */
      contextOnly: z.boolean().optional(),
      text: z.string(),
      at: z.number(),
    })
    .strict(),
  z
    .object({
      type: z.literal("assistant"),
      writer,
      runId: z.string(),
      text: z.string(),
      toolCalls: z.array(ToolCallSchema).optional(),
      at: z.number(),
    })
    .strict(),
  z
    .object({
      type: z.literal("tool_result"),
      writer,
      runId: z.string(),
      toolCallId: z.string(),
      content: z.string(),
      at: z.number(),
    })
    .strict(),
  z
    .object({
      type: z.literal("compaction"),
      writer,
      runId: z.string(),
      /** The model's summary of every message before `keepFrom`. */
      summary: z.string(),
      /** Index (0-based line) of the first transcript entry kept verbatim after this compaction. */
      keepFrom: z.number().int().nonnegative(),
      at: z.number(),
    })
    .strict(),
  z
    .object({
      /** A run claimed the session: lines of any other claim after this one are stale. */
      type: z.literal("writer"),
      runId: z.string(),
      writer: z.string(),
      at: z.number(),
    })
    .strict(),
  z
    .object({
      type: z.literal("outcome"),
      writer,
      runId: z.string(),
      status: z.enum(["completed", "aborted", "superseded", "failed", "timed_out", "interrupted"]),
      /** Why the run stopped: natural_end, user_abort, provider_error, tool_loop_guard, policy_stop, ... */
      stopReason: z.string().optional(),
      error: z.string().optional(),
      at: z.number(),
    })
    .strict(),
]);

/** `text` parsed as JSON, or undefined where it is not JSON (a torn line, a damaged value). */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** One persisted transcript line: the session header, a message, a tool result or a run's terminal outcome. */
export type TranscriptEntry = z.infer<typeof TranscriptEntrySchema>;

/** The terminal outcome of a run. */
export type RunStatus = Extract<TranscriptEntry, { type: "outcome" }>["status"];

/**
 * Drops the lines a superseded writer appended after a newer claim was
 * announced (a check-then-append race its claim check cannot close, or a
 * fenced-push-then-append one for a run's answer and outcome), and the claim
 * line itself of a writer that announced its claim late (frozen between
 * taking the claim and its first write: see `VisibleLines`). Lines written
 * outside any claim (the header, context-only messages, recovery's
 * outcomes) are always kept.
 */
export function dropStaleWrites(entries: TranscriptEntry[]): TranscriptEntry[] {
  return new VisibleLines(entries).lines;
}

/**
 * The claim generation a writer line names (`<runId>#<generation>`, as a run's claim writes it), or
 * undefined for a writer that names none (an older version's finalize wrote `<runId>#finalized`).
 */
export function writerGeneration(writer: string): number | undefined {
  const digits = /#(\d{1,15})$/.exec(writer)?.[1];
  return digits === undefined ? undefined : Number(digits);
}

/**
 * The runId of the line a new transcript starts with (`/new`): the session's claim generation then, a floor
 * for the claims read after it, not a claim itself (no run's id holds a `/`).
 */
export const NEW_TRANSCRIPT = "/new";

/**
 * The lowest generation that orders claims: a claim's generation is at least the time in ms (see
 * `generationBase`), where older versions started them at a random number below 2^31 and added one per
 * claim, which Redis losing its data could set below the ones a transcript already had. Those are taken
 * as naming none (as before); the session's next claim moves its generations up to the time.
 */
export const ORDERED_GENERATION = 1e12;

/**
 * A transcript as every reader sees it (see `dropStaleWrites`), kept up to date line by line as lines are
 * appended, so a long-lived session's copy is not filtered whole on every read.
 */
export class VisibleLines {
  /** The lines a reader sees, in order. Appended to by `add`; not to be changed otherwise. */
  readonly lines: TranscriptEntry[] = [];
  // The writer of the latest claim line so far: only its lines (and lines of no writer) are seen.
  #current: string | undefined;
  // The highest claim generation announced so far. A claim line with a lower one comes from a writer that
  // was superseded before it wrote anything (frozen between its claim in Redis and its first append): it
  // is not a claim, and its lines stay unseen, where taking it as one would show them and hide the
  // current writer's later lines.
  #generation: number | undefined;

  constructor(entries: TranscriptEntry[] = []) {
    this.add(entries);
  }

  /** Takes in lines appended to the transcript after those given so far. */
  add(entries: TranscriptEntry[]): void {
    for (const e of entries) {
      if (e.type === "writer") {
        const generation = writerGeneration(e.writer);
        if (generation !== undefined && generation >= ORDERED_GENERATION) {
          if (this.#generation !== undefined && generation < this.#generation) continue;
          this.#generation = generation;
        }
        // A new transcript's first line only sets the floor: a run that claimed that very generation and
        // wrote first stays the writer.
        if (e.runId !== NEW_TRANSCRIPT) this.#current = e.writer;
      } else if ("writer" in e && e.writer !== undefined && e.writer !== this.#current) continue;
      this.lines.push(e);
    }
  }
}
