import { OutboxFileSchema, ReplyTargetSchema } from "@hub/core";
import { z } from "zod";

/** A reply mailbox item: a segment of a reply, or (`kind`) a live preview's text or end. */
export const SegmentItemSchema = z
  .object({
    replyId: z.string(),
    index: z.number().int().nonnegative(),
    text: z.string(),
    target: ReplyTargetSchema,
    /** When the segment was queued (ms since epoch); items queued before this field existed have none. */
    at: z.number().optional(),
    /** The run and session that wrote it (when it differs from `replyId`), so delivery's log lines name them. */
    runId: z.string().optional(),
    sessionKey: z.string().optional(),
    /** A file from the outbox this segment sends (`text` is its caption). */
    attachment: OutboxFileSchema.optional(),
    /** The run's live preview (its key): a segment takes it over; `kind` items show or close it. */
    preview: z.string().optional(),
    /**
     * Not a segment: a live preview's text (`preview`), the end of a run's previews (`close`), or the end
     * of a reply whose last segment could not carry it (`end`, not sent).
     */
    kind: z.enum(["preview", "close", "end"]).optional(),
  })
  .strict();
/** A reply mailbox item. */
export type SegmentItem = z.infer<typeof SegmentItemSchema>;

const ITEM_FIELDS = new Set([
  "replyId",
  "index",
  "text",
  "target",
  "at",
  "runId",
  "sessionKey",
  "preview",
  "kind",
]);
const TARGET_FIELDS = new Set(["channel", "accountId", "chatId", "threadId", "replyToMessageId"]);

const isText = (v: unknown): v is string => typeof v === "string";
const isName = (v: unknown): boolean => typeof v === "string" && v.length > 0;

// Exactly what the schema accepts, for items without a file (the usual case), without building zod's
// result: anything else (a file, an unknown field, a wrong type) is left to the schema.
function isPlainItem(raw: unknown): raw is SegmentItem {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return false;
  const o = raw as Record<string, unknown>;
  for (const k in o) if (!ITEM_FIELDS.has(k)) return false;
  const { index, target, at, runId, sessionKey, preview, kind } = o;
  if (!isText(o.replyId) || !isText(o.text) || !Number.isSafeInteger(index) || (index as number) < 0)
    return false;
  if ((at !== undefined && typeof at !== "number") || !Number.isFinite(at ?? 0)) return false;
  if ((runId !== undefined && !isText(runId)) || (sessionKey !== undefined && !isText(sessionKey)))
    return false;
  if (
    (preview !== undefined && !isText(preview)) ||
    (kind !== undefined && kind !== "preview" && kind !== "close" && kind !== "end")
  )
    return false;
  if (typeof target !== "object" || target === null || Array.isArray(target)) return false;
  const t = target as Record<string, unknown>;
  for (const k in t) if (!TARGET_FIELDS.has(k)) return false;
  if (!isName(t.channel) || !isName(t.accountId) || !isName(t.chatId)) return false;
  return (
    (t.threadId === undefined || isName(t.threadId)) &&
    (t.replyToMessageId === undefined || isName(t.replyToMessageId))
  );
}

/** Validates a reply mailbox item read back from Redis; throws (zod's error) when it is not one. */
export function parseSegmentItem(raw: unknown): SegmentItem {
  return isPlainItem(raw) ? raw : SegmentItemSchema.parse(raw);
}
