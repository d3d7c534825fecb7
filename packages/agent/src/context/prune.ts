import type { ChatMessage } from "../model.js";

/** How much of the tool output in a history is sent to the model. */
export interface PruneOptions {
  /** How many of the most recent tool results are kept (default 6); older ones are replaced by a marker. */
  keepRecentToolResults?: number;
  /** Most characters of a kept tool result (default 2000); longer ones are cut with a marker. */
  maxCharsPerResult?: number;
}

/** Default pruning: the last 6 tool results, at most 2000 characters each. */
export const DEFAULT_PRUNE_OPTIONS = { keepRecentToolResults: 6, maxCharsPerResult: 2000 } as const;

/**
 * Returns a new array for sending to the model in which tool results older
 * than the most recent `keepRecentToolResults` are replaced by
 * `[tool result pruned: <n> characters]` and recent ones longer than
 * `maxCharsPerResult` are cut with a marker. Old tool output is rarely needed
 * again, yet it is usually the bulk of a long history.
 *
 * Never mutates `messages` and never removes a message, so every tool call
 * keeps exactly one result (providers reject unpaired calls). Results already
 * no longer than their marker are left as they are. Unchanged messages are
 * shared with the input, not copied.
 */
export function pruneToolResults(messages: ChatMessage[], options?: PruneOptions): ChatMessage[] {
  const keep = count(options?.keepRecentToolResults, DEFAULT_PRUNE_OPTIONS.keepRecentToolResults);
  const maxChars = count(options?.maxCharsPerResult, DEFAULT_PRUNE_OPTIONS.maxCharsPerResult);
  // Tool results with an ordinal above this are among the most recent `keep`.
  const oldCount = messages.filter((m) => m.role === "tool").length - keep;
  let seen = 0;
  return messages.map((m) => {
    if (m.role !== "tool") return m;
    seen++;
    const content = seen <= oldCount ? pruned(m.content) : capped(m.content, maxChars);
    return content === m.content ? m : { ...m, content };
  });
}

function pruned(content: string): string {
  const marker = `[tool result pruned: ${content.length} characters]`;
  return content.length <= marker.length ? content : marker;
}

function capped(content: string, maxChars: number): string {
  if (content.length <= maxChars) return content;
  const code = content.charCodeAt(maxChars - 1);
  // Never split a surrogate pair: the model would get a broken character.
  const kept = content.slice(0, code >= 0xd800 && code <= 0xdbff ? maxChars - 1 : maxChars);
  return `${kept}\n[… tool result truncated: showing ${kept.length} of ${content.length} characters]`;
}

// A bad option falls back to the default rather than pruning everything or nothing.
function count(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value >= 0 ? Math.floor(value) : fallback;
}
