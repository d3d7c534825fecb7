import { z } from "zod";
import type { ToolSpec } from "./model.js";
import type { SendFileInReply } from "./send-file.js";

/** A tool the agent can run: its spec for the model and its implementation. */
export interface AgentTool {
  spec: ToolSpec;
  /** Runs the tool; the returned string is the tool result the model sees. */
  run(
    args: unknown,
    context: {
      runId: string;
      sessionKey: string;
      signal: AbortSignal;
      /** Sends a file in the run's reply, in order after the text so far (runs with a reply only). */
      sendFile?: SendFileInReply | undefined;
    },
  ): Promise<string>;
}

/** `current_time`: the current date and time, in UTC and ISO 8601. */
export const currentTimeTool: AgentTool = {
  spec: {
    name: "current_time",
    description: "Returns the current date and time (UTC, ISO 8601).",
    parameters: { type: "object", properties: {}, additionalProperties: false },
  },
  run: async () => new Date().toISOString(),
};

/** The tools every run gets in this version. */
export const defaultTools: AgentTool[] = [currentTimeTool];

/** `session_status`: what the agent can tell about the current session. */
export function sessionStatusTool(status: (sessionKey: string) => Promise<string>): AgentTool {
  return {
    spec: {
      name: "session_status",
      description: "Describes the current session: model, session key, queue mode, token usage.",
      parameters: { type: "object", properties: {}, additionalProperties: false },
    },
    run: async (_args, context) => status(context.sessionKey),
  };
}

/** Tool names per profile. */
export const TOOL_PROFILES: Record<"minimal" | "standard" | "full", readonly string[]> = {
  minimal: ["current_time"],
  // http_fetch and send_message exist only when configured, so listing them here turns nothing on by itself.
  standard: [
    "current_time",
    "session_status",
    "memory_read",
    "memory_write",
    "http_fetch",
    "send_message",
    "send_file",
  ],
  full: ["*"],
};

const SendMessageSchema = z.object({ target: z.string().min(1), text: z.string().min(1).max(20_000) });

/** `send_message`: sends text to one of the configured targets through ordered delivery. */
export function sendMessageTool(
  targets: Record<string, unknown>,
  send: (target: string, text: string, runId: string) => Promise<void>,
): AgentTool {
  const names = Object.keys(targets);
  return {
    spec: {
      name: "send_message",
      description: `Sends a message to another chat. Targets: ${names.join(", ")}.`,
      parameters: {
        type: "object",
        properties: { target: { type: "string", enum: names }, text: { type: "string" } },
        required: ["target", "text"],
        additionalProperties: false,
      },
    },
    run: async (args, context) => {
      const { target, text } = SendMessageSchema.parse(args);
      if (!names.includes(target))
        return `Refused: "${target}" is not a configured target (${names.join(", ")}).`;
      await send(target, text, context.runId);
      return `Queued for delivery to ${target}.`;
    },
  };
}
