import {
  type HubConfig,
  type HubLogger,
  type MsgContext,
  QueueModeSchema,
  type ReplySink,
  type RunRequest,
  runIdForMessage,
} from "@hub/core";
import type { ParsedCommand } from "@hub/dispatch";
import type { ApprovalStore, RunRecords, SessionActivity, SessionStore } from "@hub/sessions";
import type { RunControl } from "./agent-role.js";
import { answerDirectly } from "./answer-directly.js";
import type { ChatEventPublisher } from "./events.js";
import { describeDecision } from "./failover-words.js";
import type { PendingAnnouncements } from "./pending-announcements.js";

/** What the session commands act on. */
export interface CommandDeps {
  config: HubConfig;
  activity: SessionActivity;
  control: RunControl;
  sessions: SessionStore;
  runs: RunRecords;
  replies: ReplySink;
  events: ChatEventPublisher;
  approvals: ApprovalStore;
  logger: HubLogger;
  /** The latest model failover decision (JSON, any chat's: the model chain is the hub's), if any. */
  lastModelDecision: () => Promise<string | undefined>;
  /** Where answers waiting for delivery are kept, so that a stopping process announces them. */
  announcements?: PendingAnnouncements;
}

/** What `/status` and the `session_status` tool report about a session. */
export async function sessionStatus(
  deps: Pick<CommandDeps, "config" | "activity" | "sessions" | "lastModelDecision">,
  sessionKey: string,
): Promise<string> {
  const [session, mode, usage, active, latest] = await Promise.all([
    deps.sessions.get(sessionKey),
    deps.activity.queueMode(sessionKey),
    deps.activity.usage(sessionKey),
    deps.activity.activeRun(sessionKey),
    deps.lastModelDecision(),
  ]);
  const decision = latest ? describeDecision(latest) : undefined;
  return [
    `Model: ${deps.config.agent.model}`,
    `Session: ${sessionKey} (${session?.sessionId ?? "not started yet"})`,
    `Queue mode: ${mode}`,
    `Running: ${active ?? "nothing"}`,
    `Tokens used: ${usage.inputTokens} in, ${usage.outputTokens} out`,
    ...(decision ? [`Last model failover (any chat): ${decision}`] : []),
  ].join("\n");
}

/** The longest part of an unknown queue mode repeated in the answer. */
const MODE_ECHO_CHARS = 40;

/** `/queue [mode]`: sets a valid mode; otherwise says what is wrong (an unknown mode) and lists the modes. */
async function queueCommand(
  deps: Pick<CommandDeps, "activity">,
  sessionKey: string,
  args: string,
): Promise<string> {
  const mode = QueueModeSchema.safeParse(args.toLowerCase());
  if (mode.success) {
    await deps.activity.setQueueMode(sessionKey, mode.data);
    return `Queue mode set to ${mode.data}.`;
  }
  const current = await deps.activity.queueMode(sessionKey);
  const usage = `Queue mode is ${current}. Use /queue steer, /queue followup, /queue collect or /queue interrupt.`;
  if (args === "") return usage;
  // Cut by code points: a cut through an emoji would send half of it (a lone surrogate platforms refuse).
  const points = Array.from(args);
  const shown = points.length > MODE_ECHO_CHARS ? `${points.slice(0, MODE_ECHO_CHARS).join("")}…` : args;
  return `"${shown}" is not a queue mode. ${usage}`;
}

/**
 * The run `/stop` stops: the session's own, or in a thread that has none, the run answering the thread's
 * first message or one of the thread's later messages in the chat's session. Commands stay in a thread's own session while its other messages may run in the chat's
 * (Slack's thread on a channel mention): its /stop means the answer it sees, never another thread's.
 */
async function runToStop(
  deps: Pick<CommandDeps, "activity" | "runs">,
  ctx: MsgContext,
): Promise<string | undefined> {
  const own = await deps.activity.activeRun(ctx.sessionKey);
  const cut = ctx.sessionKey.lastIndexOf(":thread:");
  if (own || ctx.threadId === undefined || cut < 0) return own;
  const parent = await deps.activity.activeRun(ctx.sessionKey.slice(0, cut));
  if (parent === undefined) return undefined;
  const rootRun = runIdForMessage(`${ctx.channel}:${ctx.accountId}:${ctx.chat.id}:${ctx.threadId}`);
  // The root's answer, or a follow-up of this thread that runs in the chat's session.
  return parent === rootRun || (await deps.runs.threadOf(parent)) === ctx.threadId ? parent : undefined;
}

/**
 * Session commands, handled at admission in every channel: `/stop` aborts the
 * running run at once (never queued behind it), `/new` starts a new session
 * in order with the session's runs, `/status` and `/queue <mode>` answer now.
 */
export function createCommandHandler(
  deps: CommandDeps,
): (command: ParsedCommand, request: RunRequest) => Promise<void> {
  const runTimeoutMs = deps.config.agent.runTimeoutSeconds * 1000;
  // Answers are queued, not awaited to delivery: a command never holds up intake behind a chat's backlog.
  const answer = (request: RunRequest, text: string) =>
    answerDirectly(
      {
        runs: deps.runs,
        replies: deps.replies,
        events: deps.events,
        runTimeoutMs,
        logger: deps.logger,
        ...(deps.announcements ? { announcements: deps.announcements } : {}),
      },
      request,
      text,
      { detachSettlement: true },
    );
  return async (command, request) => {
    const sessionKey = request.ctx.sessionKey;
    switch (command.name) {
      case "new":
        // Admitted into the session's lane by admission, in order with the session's runs.
        return;
      case "stop": {
        const active = await runToStop(deps, request.ctx);
        if (active) await deps.control.stop(active, "aborted");
        return answer(request, active ? "Stopped." : "Nothing is running.");
      }
      case "queue":
        return answer(request, await queueCommand(deps, sessionKey, command.args));
      case "approve":
      case "deny": {
        const code = command.args.split(/\s+/)[0] ?? "";
        const found =
          code !== "" && (await deps.approvals.answer(code, sessionKey, command.name === "approve"));
        return answer(
          request,
          found
            ? command.name === "approve"
              ? "Approved."
              : "Denied."
            : `No pending approval with code "${code}" in this chat.`,
        );
      }
      case "status":
        return answer(request, await sessionStatus(deps, sessionKey));
    }
  };
}
