import type { ChatMessage, ModelProvider, ModelStopReason, ModelUsage, ToolCall } from "./model.js";
import type { SendFileInReply } from "./send-file.js";
import type { ToolCallChain } from "./tool-policy.js";
import type { AgentTool } from "./tools.js";

/** Input of one agent turn (one user message to one final answer, with tool calls in between). */
export interface AgentTurnInput {
  runId: string;
  sessionKey: string;
  provider: ModelProvider;
  model: string;
  /** System prompt, history and the new user message. */
  messages: ChatMessage[];
  tools: AgentTool[];
  signal: AbortSignal;
  /** Called with each text delta as it streams (in order). */
  onText: (delta: string) => void;
  /** Called with each image in the answer, in its place; the stream waits until it is queued. */
  onImage?: (image: { mime: string; data: Uint8Array }) => Promise<void>;
  /** Most model calls in one turn, so a tool loop cannot run forever. */
  maxModelCalls?: number;
  /**
   * Persists one completed step (an assistant message and its tool results)
   * before the next model call; throws to stop the turn (e.g. the run lost its
   * writer claim). A failed model call commits nothing. `final` is true for the
   * answer's last step (no tool calls: no model call follows it), which the
   * callee may keep to persist later (the runner writes it with the run's outcome).
   */
  onCommit?: (step: ChatMessage[], final: boolean) => Promise<void>;
  /** Messages that arrived while the run was working (steering), injected at the next batch boundary. */
  takeSteering?: () => Promise<string[]>;
  /** Loop guard, policy, approval and hooks, before each tool call; without it, listed tools just run. */
  chain?: ToolCallChain;
  /** Sends a file in the reply, after the text streamed so far (the `send_file` tool's way out). */
  sendFile?: SendFileInReply;
  /** True when a steering message is waiting: tools of the batch not yet started are then skipped. */
  steeringPending?: () => Promise<boolean>;
}

/** More tokens than any model call has (a provider's usage past it is garbage, not a count). */
const MAX_CALL_TOKENS = 100_000_000;

/** A provider's token count as the session's totals take it: a whole number from 0 to MAX_CALL_TOKENS, else 0. */
export function plausibleTokens(count: number | undefined): number {
  return count !== undefined && Number.isInteger(count) && count >= 0 && count <= MAX_CALL_TOKENS ? count : 0;
}

/** What a turn produced and how it ended. */
export interface AgentTurnResult {
  produced: ChatMessage[];
  text: string;
  stopReason: ModelStopReason | "tool_loop" | "policy_stop";
  usage: ModelUsage;
}

/**
 * Runs one turn: stream the model, run the tools it asks for, feed the results
 * back, until it answers without tools. Every tool call gets exactly one
 * result (a synthetic one for calls skipped by an abort). Each completed step
 * is committed through `onCommit` before the next model call.
 */
export async function runAgentTurn(input: AgentTurnInput): Promise<AgentTurnResult> {
  const messages = [...input.messages];
  const produced: ChatMessage[] = [];
  const usage: ModelUsage = { inputTokens: 0, outputTokens: 0 };
  const tools = new Map(input.tools.map((t) => [t.spec.name, t]));
  let text = "";
  const maxCalls = input.maxModelCalls ?? 8;
  for (let call = 0; call < maxCalls; call++) {
    let callText = "";
    const calls: ToolCall[] = [];
    let stopReason: ModelStopReason = "stop";
    for await (const event of input.provider.stream({
      model: input.model,
      messages,
      ...(input.tools.length ? { tools: input.tools.map((t) => t.spec) } : {}),
      signal: input.signal,
    })) {
      if (event.type === "text") {
        callText += event.delta;
        input.onText(event.delta);
      } else if (event.type === "tool_call") calls.push(event.call);
      else if (event.type === "image") await input.onImage?.(event);
      else {
        stopReason = event.stopReason;
        usage.inputTokens += plausibleTokens(event.usage?.inputTokens);
        usage.outputTokens += plausibleTokens(event.usage?.outputTokens);
      }
    }
    text += callText;
    const step: ChatMessage[] = [
      { role: "assistant", content: callText, ...(calls.length ? { toolCalls: calls } : {}) },
    ];
    let skip: string | undefined;
    let policyStop = false;
    for (const toolCall of calls) {
      // A tool that started finishes; the ones not started get a paired synthetic result, so the transcript stays valid.
      if (!skip && input.signal.aborted) skip = "Skipped: the run was stopped before this tool ran.";
      if (!skip && (await input.steeringPending?.()))
        skip = "Skipped: the user sent a new message before this tool ran.";
      if (skip) {
        step.push({ role: "tool", toolCallId: toolCall.id, content: skip });
        continue;
      }
      const outcome = await runTool(tools.get(toolCall.name), toolCall, input);
      step.push({ role: "tool", toolCallId: toolCall.id, content: outcome.result });
      if (outcome.stopRun) {
        policyStop = true;
        skip = "Skipped: the run was stopped by policy before this tool ran.";
      }
    }
    await input.onCommit?.(step, calls.length === 0);
    messages.push(...step);
    produced.push(...step);
    if (calls.length === 0) return { produced, text, stopReason, usage };
    if (policyStop) return { produced, text, stopReason: "policy_stop", usage };
    if (input.signal.aborted) throw input.signal.reason ?? new Error("aborted");
    // Steering lands only here, at a batch boundary, never in the middle of a tool batch.
    for (const steer of (await input.takeSteering?.()) ?? []) messages.push({ role: "user", content: steer });
  }
  return { produced, text, stopReason: "tool_loop", usage };
}

async function runTool(
  tool: AgentTool | undefined,
  call: ToolCall,
  input: AgentTurnInput,
): Promise<{ result: string; stopRun?: boolean }> {
  if (!tool) return { result: `Error: there is no tool named "${call.name}".` };
  let args: unknown;
  if (input.chain) {
    const verdict = await input.chain.authorize(call);
    if (!verdict.run) return { result: verdict.result, ...(verdict.stopRun ? { stopRun: true } : {}) };
    args = verdict.args;
  } else {
    try {
      args = call.arguments.trim() ? JSON.parse(call.arguments) : {};
    } catch {
      return {
        result: `Error: the arguments of ${call.name} are not valid JSON; call it again with a JSON object.`,
      };
    }
  }
  try {
    return {
      result: await tool.run(args, {
        runId: input.runId,
        sessionKey: input.sessionKey,
        signal: input.signal,
        sendFile: input.sendFile,
      }),
    };
  } catch (error) {
    return { result: `Error: ${call.name} failed: ${(error as Error).message}` };
  }
}
