import type { ToolSpec } from "./model.js";

/** A tool the agent can run: its spec for the model and its implementation. */
export interface AgentTool {
  spec: ToolSpec;
  /** Runs the tool; the returned string is the tool result the model sees. */
  run(args: unknown, context: { runId: string; sessionKey: string; signal: AbortSignal }): Promise<string>;
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
