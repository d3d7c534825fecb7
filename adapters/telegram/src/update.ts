import { formatIssues } from "@hub/core";
import { ALLOWED_UPDATES, type TelegramMessage, TelegramMessageSchema } from "./normalize.js";

/** The kinds of update the adapter handles. */
export type UpdateKind = (typeof ALLOWED_UPDATES)[number];

/** One raw update, read at the edge: a message to normalize, or why there is nothing to do with it. */
export type ParsedUpdate =
  | { ok: true; updateId: number; kind: UpdateKind; message: TelegramMessage }
  | { ok: false; updateId: number | undefined; reason: string; ignored?: boolean };

/**
 * The update_id of a raw update, when it has a usable one: an object (not an array) whose update_id
 * is a non-negative safe integer. An exact check, the same as
 * `z.looseObject({ update_id: z.number().int().nonnegative() })` (update.test.ts compares them), without
 * building a parse result for each of the two reads per update (the batch's offset, then the update).
 */
export function updateIdOf(raw: unknown): number | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const id = (raw as { update_id?: unknown }).update_id;
  return typeof id === "number" && Number.isSafeInteger(id) && id >= 0 ? id : undefined;
}

/**
 * Validates every field the adapter reads from a raw update with zod, before
 * anything else touches it. An update of another kind (a poll, a reaction) is
 * `ignored`; one whose message does not match the Bot API's shape is not ok.
 */
export function parseUpdate(raw: unknown): ParsedUpdate {
  const updateId = updateIdOf(raw);
  if (updateId === undefined) return { ok: false, updateId, reason: "the update has no valid update_id" };
  const update = raw as Record<string, unknown>;
  const kind = ALLOWED_UPDATES.find((k) => update[k] !== undefined);
  if (!kind) return { ok: false, updateId, reason: "not a message update", ignored: true };
  const message = TelegramMessageSchema.safeParse(update[kind]);
  if (!message.success) {
    const issues = formatIssues(message.error.issues.slice(0, 3));
    return { ok: false, updateId, reason: `${kind} does not match the Bot API's Message (${issues})` };
  }
  return { ok: true, updateId, kind, message: message.data };
}
