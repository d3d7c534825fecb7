import type { HubLogger, MsgContext } from "@hub/core";
import type { TranscriptEntry } from "@hub/sessions";
import { type History, trimHistory } from "../history.js";
import type { ChatMessage, ModelImage, ModelProvider } from "../model.js";
import type { AgentTool } from "../tools.js";
import { cachedWorkspaceBootstrap } from "./bootstrap-cache.js";
import { compactionMessage, estimateTokens, planCompaction, summarize } from "./compaction.js";
import { systemPromptParts } from "./prompt.js";
import { pruneToolResults } from "./prune.js";

const DEFAULT_IDENTITY = "You are a helpful assistant reached through a chat hub. Answer concisely.";

// After a restart, the interrupted turn is asked again; with messages steered into it, they follow it.
const resumeNote = (steered: number) =>
  steered === 0
    ? "Note: the hub restarted while you were answering the user's last message, so that answer was interrupted. Answer the last message now, in full."
    : "Note: the hub restarted while you were answering the user's last messages, so that answer was interrupted. Answer them now, in full.";

/** What goes into one turn's model context. */
export interface ContextInput {
  ctx: MsgContext;
  runId: string;
  /** The session's history as model messages (as of the start of the run, without its own question). */
  history: History;
  userText: string;
  /** Messages steered into the turn before it was interrupted (a resume): asked after `userText`. */
  steered?: string[];
  resuming: boolean;
  tools: AgentTool[];
  provider: ModelProvider;
  model: string;
  signal: AbortSignal;
  /** Writes a compaction line (checked against the run's writer claim). */
  writeChecked: (entries: TranscriptEntry[]) => Promise<void>;
  log: HubLogger;
}

/** The agent's context settings. */
export interface ContextSettings {
  systemPrompt?: string | undefined;
  workspaceDir: string;
  bootstrapLimits: { perFileChars: number; totalChars: number };
  contextWindowTokens: number;
  historyLimit?: number | undefined;
}

/**
 * Assembles the messages of a turn: the system prompt (identity, rules, tool
 * catalog, where the user is, workspace files), the history (compacted into a
 * summary written to the transcript when it nears the context window; old tool
 * results shortened only in what the model sees), the user's message, and a
 * note when the run resumes after a restart.
 */
export async function assembleContext(
  input: ContextInput,
  settings: ContextSettings,
  /** Images of the user's message, for a model that takes them. */
  images: ModelImage[] = [],
): Promise<ChatMessage[]> {
  const { text: system, stableChars } = await systemPromptFor(input, settings);
  const past = await compactIfNeeded(input, settings, system);
  const steered = input.steered ?? [];
  return [
    { role: "system", content: system, stableChars },
    ...pruneToolResults(trimHistory(past, settings.historyLimit ?? 200)),
    { role: "user", content: input.userText, ...(images.length ? { images } : {}) },
    ...steered.map((content) => ({ role: "user" as const, content })),
    ...(input.resuming ? [{ role: "system" as const, content: resumeNote(steered.length) }] : []),
  ];
}

async function systemPromptFor(
  input: ContextInput,
  settings: ContextSettings,
): Promise<{ text: string; stableChars: number }> {
  const { ctx } = input;
  const bootstrap = await cachedWorkspaceBootstrap(settings.workspaceDir, settings.bootstrapLimits);
  if (bootstrap.diagnostics.length)
    input.log.warn({ diagnostics: bootstrap.diagnostics }, "workspace files were cut for the model");
  return systemPromptParts({
    identity: settings.systemPrompt ?? DEFAULT_IDENTITY,
    tools: input.tools.map((t) => t.spec),
    channel: {
      channel: ctx.channel,
      chatType: ctx.chat.type,
      ...(ctx.chat.title ? { chatTitle: ctx.chat.title } : {}),
      ...(ctx.sender.name ? { senderName: ctx.sender.name } : {}),
      senderId: ctx.sender.id,
    },
    now: new Date(),
    bootstrap,
  });
}

// Near the context window, older turns become one summary, written to the transcript.
async function compactIfNeeded(
  input: ContextInput,
  settings: ContextSettings,
  system: string,
): Promise<readonly ChatMessage[]> {
  const { history } = input;
  const past = history.messages;
  const options = {
    contextWindow: settings.contextWindowTokens,
    reserveTokens:
      estimateTokens([
        { role: "system", content: system },
        { role: "user", content: input.userText },
      ]) + 4096,
    keepRecentTokens: Math.floor(settings.contextWindowTokens * 0.3),
  };
  // From the history's running count: no pass over it when it fits.
  const plan = planCompaction(past, options, history.tokens);
  if (!plan) return past;
  const summary = await summarize(input.provider, input.model, plan.older, input.signal);
  const firstKept = history.indices[past.length - plan.kept.length] ?? -1;
  // A tail that starts at the previous summary keeps what that summary kept.
  const previous = history.lastCompaction;
  const keepFrom = firstKept >= 0 ? firstKept : (previous?.keepFrom ?? 0);
  await input.writeChecked([{ type: "compaction", runId: input.runId, summary, keepFrom, at: Date.now() }]);
  input.log.info({ summarized: plan.older.length, kept: plan.kept.length }, "history compacted");
  return [compactionMessage(summary), ...plan.kept];
}
