import type { RunRequest } from "@hub/core";
import type { TranscriptEntry } from "@hub/sessions";
import { compactionMessage } from "./context/compaction.js";
import { historyUserContent } from "./context/untrusted.js";
import { withMediaNotes } from "./media/prepare.js";
import type { ChatMessage } from "./model.js";

/**
 * Turns transcript entries into model messages, from the latest compaction on
 * (its summary stands for everything before it); context-only group messages
 * are marked as such. `indices[i]` is the transcript line of message i (-1 for a summary).
 */
export function historyMessages(
  entries: TranscriptEntry[],
  skipRunId?: string,
): { messages: ChatMessage[]; indices: number[] } {
  const messages: ChatMessage[] = [];
  const indices: number[] = [];
  let start = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e?.type === "compaction") {
      messages.push(compactionMessage(e.summary));
      indices.push(-1);
      start = e.keepFrom;
      break;
    }
  }
  const userContent = historyUserContent(entries);
  for (let i = start; i < entries.length; i++) {
    const e = entries[i]!;
    if (skipRunId && "runId" in e && e.runId === skipRunId) continue;
    let m: ChatMessage | undefined;
    if (e.type === "user") m = { role: "user", content: userContent(e) };
    else if (e.type === "assistant")
      m = { role: "assistant", content: e.text, ...(e.toolCalls ? { toolCalls: e.toolCalls } : {}) };
    else if (e.type === "tool_result") m = { role: "tool", toolCallId: e.toolCallId, content: e.content };
    if (m) {
      messages.push(m);
      indices.push(i);
    }
  }
  return { messages, indices };
}

/** The last `limit` messages, never starting on a tool result or a tool call whose results were cut off. */
export function trimHistory(messages: ChatMessage[], limit: number): ChatMessage[] {
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
