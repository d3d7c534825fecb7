import { createHmac, randomBytes } from "node:crypto";
import { neutralizeRoleMarkers, normalizeText } from "@hub/core";
import type { TranscriptEntry } from "@hub/sessions";

// Block ids are keyed by a secret of this process: whoever writes the text cannot compute its id.
const BOUNDARY_KEY = randomBytes(32);

/** `<`, `>` and `&` as entities: marked text can never contain a tag, so it can never close its block. */
export function escapeMarkup(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * Wraps text other people wrote (group members, quoted messages, web pages,
 * tool output) so the model can tell it from instructions, and so the text
 * cannot forge the end of its own block: its markup is escaped, role markers
 * are neutralized, and the block carries an id derived from a per-process
 * secret (the same text gets the same id within a process, so prompts stay
 * cacheable). `source` says where it came from, on one line.
 *
 *     <untrusted id="3f9a…" source="web page https://example.com/">
 *     …escaped text…
 *     </untrusted id="3f9a…">
 */
export function markUntrusted(text: string, source: string): string {
  const body = escapeMarkup(neutralizeRoleMarkers(normalizeText(text), "quoted"));
  const id = createHmac("sha256", BOUNDARY_KEY)
    .update(source)
    .update("\0")
    .update(text)
    .digest("hex")
    .slice(0, 16);
  const from = escapeMarkup(oneLine(source)).replace(/"/g, "&quot;");
  return `<untrusted id="${id}" source="${from}">\n${body}\n</untrusted id="${id}">`;
}

/** A sender as the model sees it: their display name (quoted, one line) and their id. */
export function describeSender(name: string | undefined, id: string | undefined): string {
  const who = escapeMarkup(JSON.stringify(oneLine(name ?? "")));
  const sid = escapeMarkup(JSON.stringify(oneLine(id ?? "unknown")));
  return name ? `${who} (id ${sid})` : `the member with id ${sid}`;
}

/** The text of the message being answered, with the message it replies to (someone else's words) marked untrusted. */
export function withQuotedReply(ctx: {
  body: string;
  replyTo?: { body?: string | undefined; senderId?: string | undefined } | undefined;
}): string {
  const quoted = ctx.replyTo?.body;
  if (!quoted) return ctx.body;
  const author = ctx.replyTo?.senderId
    ? ` by the member with id ${JSON.stringify(ctx.replyTo.senderId)}`
    : "";
  return `[replying to this message]\n${markUntrusted(quoted, `quoted message${author}`)}\n\n${ctx.body}`;
}

/** A transcript's user line. */
export type UserEntry = Extract<TranscriptEntry, { type: "user" }>;

/**
 * Who wrote in a session so far: whether its user lines must say who wrote each (more than one sender,
 * or a group message not addressed to the agent). Once true, it stays true as lines are added.
 */
export class HistorySenders {
  readonly #senders = new Set<string>();
  #contextOnly = false;

  add(e: UserEntry): void {
    this.#senders.add(e.senderId ?? "");
    this.#contextOnly ||= e.contextOnly === true;
  }

  get several(): boolean {
    return this.#senders.size > 1 || this.#contextOnly;
  }
}

/**
 * How a user line of a transcript reads in the model's history. A group message not addressed to the
 * agent is marked untrusted and names its author; when more than one person wrote in the session
 * (`several`, see `HistorySenders`), every message says who wrote it.
 */
export function userContent(e: UserEntry, several: boolean): string {
  if (!several) return e.text;
  const who = describeSender(e.senderName, e.senderId);
  if (e.contextOnly)
    return `[group message from ${who}, not addressed to you]\n${markUntrusted(e.text, `group member ${who}`)}`;
  return `[from ${who}]\n${e.text}`;
}
