import { randomUUID } from "node:crypto";
import {
  type ChannelAccess,
  channelAccess,
  type HubConfig,
  type MsgContext,
  type Outbox,
  type ReplySink,
} from "@hub/core";
import { httpFetchTool } from "./http-fetch.js";
import { groupMemoryDefault, type MemoryTrust, memoryTools } from "./memory.js";
import { sendFileTool } from "./send-file.js";
import { type ApprovalMode, assembleTools } from "./tool-policy.js";
import {
  type AgentTool,
  currentTimeTool,
  sendMessageTool,
  sessionStatusTool,
  TOOL_PROFILES,
} from "./tools.js";

/** The tools one run gets, and how each is approved. */
export interface RunTools {
  tools: AgentTool[];
  approvals: Record<string, ApprovalMode>;
  approvalTimeoutMs: number;
}

/**
 * Whose memory a run uses: the operator's only in a direct chat with someone
 * the operator named (the web chat's owner, or a sender listed in the
 * channel's `allowFrom`); paired strangers, web chat clients and groups get
 * untrusted notes.
 */
export function memoryTrust(ctx: MsgContext, access: ChannelAccess | undefined): MemoryTrust {
  if (ctx.chat.type !== "direct") return "untrusted";
  if (ctx.channel === "webchat") return ctx.sender.id === "owner" ? "operator" : "untrusted";
  return access?.allowFrom.includes(ctx.sender.id) ? "operator" : "untrusted";
}

/**
 * Decides which tools a run gets: the configured tools that exist (http_fetch
 * and send_message only when configured), narrowed by the profile and the
 * allow/deny lists at agent, channel and group level (deny wins; memory off
 * in groups unless named), with the memory of the right trust.
 */
export function createToolAccess(
  config: Pick<HubConfig, "agent" | "channels">,
  deps: {
    workspace: string;
    statusText: (sessionKey: string) => Promise<string>;
    replies: ReplySink;
    /** Where `send_file` puts files; without it the tool does not exist. */
    outbox?: Outbox;
    /** `limits.maxAttachmentBytes`: the largest file `send_file` sends. */
    maxAttachmentBytes?: number;
  },
): (ctx: MsgContext) => RunTools {
  const t = config.agent.tools;
  const available = [
    currentTimeTool,
    sessionStatusTool(deps.statusText),
    ...configuredTools(config, deps.replies),
    ...(deps.outbox
      ? [
          sendFileTool({
            workspaceDir: deps.workspace,
            outbox: deps.outbox,
            maxBytes: deps.maxAttachmentBytes ?? 20 * 1024 * 1024,
          }),
        ]
      : []),
  ];
  const memory = {
    operator: memoryTools(deps.workspace, "operator"),
    untrusted: memoryTools(deps.workspace, "untrusted"),
  };
  return (ctx) => {
    const access = channelAccess(config.channels, ctx.channel, ctx.accountId);
    const group =
      ctx.chat.type === "direct" ? undefined : (access?.groups[ctx.chat.id] ?? access?.groups["*"]);
    const levels = [t, access?.tools ?? {}, group?.tools ?? {}];
    levels.push(groupMemoryDefault(ctx.chat.type, [access?.tools, group?.tools]));
    return {
      tools: assembleTools(
        [...available, ...memory[memoryTrust(ctx, access)]],
        TOOL_PROFILES[t.profile],
        levels,
      ),
      approvals: t.approvals,
      approvalTimeoutMs: t.approvalTimeoutSeconds * 1000,
    };
  };
}

// Tools that exist only when the operator configured them.
function configuredTools(config: Pick<HubConfig, "agent">, replies: ReplySink): AgentTool[] {
  const t = config.agent.tools;
  const tools: AgentTool[] = [];
  if (t.httpFetchHosts.length)
    tools.push(
      httpFetchTool({
        allowHosts: t.httpFetchHosts,
        ports: t.httpFetchPorts,
        allowPrivate: t.httpFetchAllowPrivate,
      }),
    );
  if (Object.keys(t.sendTargets).length)
    tools.push(
      sendMessageTool(t.sendTargets, async (name, text, runId) => {
        const reply = replies.open(`${runId}.send.${randomUUID()}`, t.sendTargets[name]!);
        await reply.push(text);
        await reply.end();
      }),
    );
  return tools;
}
