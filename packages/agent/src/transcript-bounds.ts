import type { ChatMessage } from "./model.js";
import { MAX_ANSWER_CHARS } from "./turn-ending.js";

/** The most of one tool call's arguments a transcript keeps (the call itself got them whole). */
export const MAX_KEPT_ARGUMENT_CHARS = 64 * 1024;

// `text` cut at `max` characters, saying how much was left out.
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}… [cut: ${(text.length - max).toLocaleString("en-US")} more characters not kept]`;
}

/**
 * A model's message as the transcript keeps it: its text no longer than one answer sends, each tool call's
 * arguments at most MAX_KEPT_ARGUMENT_CHARS (longer ones are replaced by a JSON note of their size). A broken model's 4 MB answer or 10 MB of arguments would
 * otherwise be sent back with every later turn of the session (a context no model takes) and read from
 * disk each time.
 */
export function keptMessage(message: ChatMessage): ChatMessage {
  if (message.role !== "assistant") return message;
  const content = cut(message.content, MAX_ANSWER_CHARS);
  const long = message.toolCalls?.some((c) => c.arguments.length > MAX_KEPT_ARGUMENT_CHARS) === true;
  if (content === message.content && !long) return message;
  // Kept as JSON (a provider replays them as arguments): what they were is said, not half of it.
  const toolCalls = message.toolCalls?.map((c) =>
    c.arguments.length > MAX_KEPT_ARGUMENT_CHARS
      ? {
          ...c,
          arguments: JSON.stringify({ cut: `${c.arguments.length} characters of arguments, not kept` }),
        }
      : c,
  );
  return { ...message, content, ...(toolCalls ? { toolCalls } : {}) };
}
