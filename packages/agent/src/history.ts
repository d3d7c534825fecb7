import type { RunRequest } from "@hub/core";
import type { TranscriptEntry } from "@hub/sessions";
import { compactionMessage, messageTokens } from "./context/compaction.js";
import { HistorySenders, type UserEntry, userContent } from "./context/untrusted.js";
import { withMediaNotes } from "./media/prepare.js";
import type { ChatMessage } from "./model.js";

type CompactionEntry = Extract<TranscriptEntry, { type: "compaction" }>;

/** A session's past as the model sees it, and what assembling a turn's context needs of it. */
export interface History {
  /** Model messages from the latest compaction on (its summary first); read only. */
  readonly messages: readonly ChatMessage[];
  /** `indices[i]` is the transcript line of message i (-1 for a summary). */
  readonly indices: readonly number[];
  /** `estimateTokens(messages)`. */
  readonly tokens: number;
  /** The latest compaction line, if any. */
  readonly lastCompaction: CompactionEntry | undefined;
}

/**
 * Turns transcript entries into model messages, from the latest compaction on
 * (its summary stands for everything before it), leaving out the lines of
 * `skipRunId` and the lines `leaveOut` names (counted nowhere, not even as a
 * sender); context-only group messages are marked as such. `indices` are
 * positions in `entries`, whatever is left out.
 */
export function historyMessages(
  entries: readonly TranscriptEntry[],
  skipRunId?: string,
  leaveOut?: (e: TranscriptEntry) => boolean,
): History {
  const history = new HistoryBuilder(skipRunId, leaveOut);
  history.takeIn(entries, entries.length);
  return history;
}

// Each held session's history, kept up to date as its lines grow (see `historyOfHeld`).
const heldHistories = new WeakMap<readonly TranscriptEntry[], HistoryBuilder>();

/**
 * `historyMessages(lines.slice(0, count))` for a held session's lines (`HeldSession.entries()`, which
 * only grow and persist across the session's runs in this process): only the lines added since the
 * session's last run here are turned into messages, instead of its whole history on every run. The
 * result is shared with the next run's: read only.
 */
export function historyOfHeld(lines: readonly TranscriptEntry[], count: number): History {
  let history = heldHistories.get(lines);
  if (!history || history.taken > count) {
    history = new HistoryBuilder();
    heldHistories.set(lines, history);
  }
  history.takeIn(lines, count);
  return history;
}

/** A history built line by line (see `historyMessages`). */
class HistoryBuilder implements History {
  messages: ChatMessage[] = [];
  indices: number[] = [];
  tokens = 0;
  lastCompaction: CompactionEntry | undefined;
  /** How many lines were taken in. */
  taken = 0;
  readonly #senders = new HistorySenders();
  /** Where in `messages` the user lines are: their text changes when the session gets a second sender. */
  #userAt: number[] = [];

  constructor(
    private readonly skipRunId?: string,
    private readonly leaveOut?: (e: TranscriptEntry) => boolean,
  ) {}

  /** Takes in `lines[taken..count)`: lines appended after those taken in so far. */
  takeIn(lines: readonly TranscriptEntry[], count: number): void {
    const wasSeveral = this.#senders.several;
    let from = this.taken;
    let compaction: CompactionEntry | undefined;
    for (let i = from; i < count; i++) {
      const e = lines[i]!;
      if (this.leaveOut?.(e)) continue;
      if (e.type === "user") this.#senders.add(e);
      else if (e.type === "compaction") compaction = e;
    }
    // A compaction among the new lines: its summary stands for everything before its first kept line.
    if (compaction) {
      this.lastCompaction = compaction;
      this.#restart(compactionMessage(compaction.summary));
      from = compaction.keepFrom;
    } else if (!wasSeveral && this.#senders.several) this.#retell(lines);
    for (let i = from; i < count; i++) this.#add(lines[i]!, i);
    this.taken = count;
  }

  #restart(summary: ChatMessage): void {
    this.messages = [summary];
    this.indices = [-1];
    this.tokens = messageTokens(summary);
    this.#userAt = [];
  }

  #add(e: TranscriptEntry, line: number): void {
    if (this.skipRunId && "runId" in e && e.runId === this.skipRunId) return;
    if (this.leaveOut?.(e)) return;
    let m: ChatMessage | undefined;
    if (e.type === "user") {
      this.#userAt.push(this.messages.length);
      m = { role: "user", content: userContent(e, this.#senders.several) };
    } else if (e.type === "assistant")
      m = { role: "assistant", content: e.text, ...(e.toolCalls ? { toolCalls: e.toolCalls } : {}) };
    else if (e.type === "tool_result") m = { role: "tool", toolCallId: e.toolCallId, content: e.content };
    if (!m) return;
    this.messages.push(m);
    this.indices.push(line);
    this.tokens += messageTokens(m);
  }

  // The session got its second sender: every user line kept so far now says who wrote it.
  #retell(lines: readonly TranscriptEntry[]): void {
    for (const at of this.#userAt) {
      const e = lines[this.indices[at]!] as UserEntry;
      const m: ChatMessage = { role: "user", content: userContent(e, true) };
      this.tokens += messageTokens(m) - messageTokens(this.messages[at]!);
      this.messages[at] = m;
    }
  }
}

/** The last `limit` messages, never starting on a tool result or a tool call whose results were cut off. */
export function trimHistory(messages: readonly ChatMessage[], limit: number): ChatMessage[] {
  let start = Math.max(0, messages.length - limit);
  while (start < messages.length && messages[start]?.role !== "user") start++;
  return messages.slice(start);
}

/** The transcript line of a user's message. */
export function userEntryOf(request: RunRequest): Extract<TranscriptEntry, { type: "user" }> {
  const { ctx, runId } = request;
  return {
    type: "user",
    runId,
    messageId: ctx.messageId,
    senderId: ctx.sender.id,
    ...(ctx.sender.name ? { senderName: ctx.sender.name } : {}),
    // Attachments stay in the conversation as short notes (their bytes are never in the transcript).
    text: withMediaNotes(ctx),
    at: ctx.timestamp,
  };
}

/**
 * `entry` tagged with the writer claim it is written under. Object.assign, not `{ ...entry, writer }`: a
 * spread at a site that sees lines of several shapes gave every copy a hidden class of its own in Node 20's
 * V8 (a Map and a DescriptorArray each: the kept session copies held thousands, and every read of their
 * lines missed its inline cache); assigned, the copies share their classes.
 */
export function writtenBy<T extends TranscriptEntry>(entry: T, writer: string): T {
  return Object.assign({}, entry, { writer });
}

/** True when the transcript has a run's outcome line: its end is written (an attempt's settle wrote it). */
export function endWritten(entries: readonly TranscriptEntry[], runId: string): boolean {
  return entries.some((e) => e.type === "outcome" && e.runId === runId);
}

/** The transcript line of a message a turn produced (the model's answer or a tool's result). */
export function toEntry(m: ChatMessage, runId: string): TranscriptEntry {
  const at = Date.now();
  if (m.role === "assistant")
    return {
      type: "assistant",
      runId,
      text: m.content,
      ...(m.toolCalls ? { toolCalls: m.toolCalls } : {}),
      at,
    };
  if (m.role === "tool")
    return { type: "tool_result", runId, toolCallId: m.toolCallId, content: m.content, at };
  throw new Error(`a turn does not produce ${m.role} messages`);
}
