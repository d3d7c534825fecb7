import { createLogger, HubError, redactUrl, resolveStateDir } from "@hub/core";
import { createRedis } from "@hub/queue";
import {
  FileSessionStore,
  NEW_TRANSCRIPT,
  RedisSessionStore,
  type SessionStore,
  SessionWriters,
  type TranscriptEntry,
} from "@hub/sessions";
import type { Command } from "commander";
import { configOf, indentLines, output, via, withRedis } from "./context.js";

/** Runs `work` on the configured session store (files in the state dir, or Redis with `sessions.store: "redis"`). */
async function withStore<T>(command: Command, work: (store: SessionStore) => Promise<T>): Promise<T> {
  const { config } = configOf(command);
  const logger = createLogger({ level: "silent" });
  if (config.sessions.store === "redis") {
    via(`Redis ${redactUrl(config.redis.url)}`);
    return withRedis(config, (redis) => work(new RedisSessionStore(redis, config.redis.prefix, logger)));
  }
  via(`state directory ${resolveStateDir()}`);
  return work(new FileSessionStore(resolveStateDir(), logger));
}

/** `hub sessions list|show|reset`: straight to the state directory (the hub's session files). */
export function registerSessions(program: Command): void {
  const sessions = program
    .command("sessions")
    .description("sessions and their transcripts (straight to the state directory, or Redis)");
  sessions
    .command("list")
    .description("every session, most recently active first")
    .option("--json", "print JSON")
    .action(async (_opts, command: Command) => {
      const list = await withStore(command, (s) => s.list());
      output(command, list, () =>
        list.length === 0
          ? "No sessions yet."
          : list
              .map((s) => `${s.sessionKey}  ${s.sessionId}  updated ${new Date(s.updatedAt).toISOString()}`)
              .join("\n"),
      );
    });
  sessions
    .command("show <sessionKey>")
    .description("a session's transcript")
    .option("--json", "print JSON")
    .option("--limit <n>", "only the last n entries")
    .action(async (sessionKey: string, opts: { limit?: string }, command: Command) => {
      const limit = opts.limit === undefined ? undefined : Number(opts.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit > 0))
        throw new HubError("bad_limit", `--limit must be a whole number above 0, not "${opts.limit}".`);
      const { record, entries } = await withStore(command, async (s) => {
        const record = await s.get(sessionKey);
        if (!record) throw noSession(sessionKey);
        const all = await s.read(record.sessionId);
        return { record, entries: limit === undefined ? all : all.slice(-limit) };
      });
      output(command, { ...record, entries }, () =>
        [
          `${record.sessionKey} (transcript ${record.sessionId})`,
          ...entries.map((e) => {
            const text = describeEntry(e);
            // Continuation lines are indented deeper: a message cannot print what looks like an entry of its own.
            const shown = text.length > 200 ? `${text.slice(0, 200)}…` : text;
            return `  [${e.type}] ${indentLines(shown, "      ")}`;
          }),
        ].join("\n"),
      );
    });
  sessions
    .command("reset <sessionKey>")
    .description("start a new transcript for the session (the old one is kept on disk)")
    .action(async (sessionKey: string, _opts: unknown, command: Command) => {
      // As /new starts one: with the session's claim generation (see SessionWriters.newTranscriptLine).
      const first = (await withWriters(command, (w) => w.newTranscriptLine(sessionKey), "quiet")) ?? [];
      const record = await withStore(command, async (s) => {
        if (!(await s.get(sessionKey))) throw noSession(sessionKey);
        return s.reset(sessionKey, first);
      });
      await withWriters(command, (w) => w.touch(sessionKey));
      console.log(`Session ${sessionKey} now uses a new transcript ${record.sessionId}.`);
    });
}

// The session's writer record, for the reset: a running hub keeps a session in memory between its runs, and
// the touch makes it read the reset session again. Undefined (and said, unless "quiet") when Redis does not answer.
async function withWriters<T>(
  command: Command,
  work: (writers: SessionWriters) => Promise<T>,
  unreachable: "warn" | "quiet" = "warn",
): Promise<T | undefined> {
  const { config } = configOf(command);
  const redis = createRedis(config.redis.url, { maxRetriesPerRequest: 1, connectTimeoutMs: 3000 });
  redis.on("error", () => {});
  try {
    return await work(new SessionWriters(redis, config.redis.prefix));
  } catch {
    if (unreachable === "warn")
      console.warn(
        `Could not reach Redis at ${redactUrl(config.redis.url)}: a running hub may keep using the old transcript until it restarts.`,
      );
    return undefined;
  } finally {
    redis.disconnect();
  }
}

function noSession(sessionKey: string): HubError {
  return new HubError("session_unknown", `No session ${sessionKey}; run "hub sessions list" to see them.`);
}

/** One transcript line as a person reads it: the message, or what happened (a run's claim, its outcome). */
export function describeEntry(e: TranscriptEntry): string {
  switch (e.type) {
    case "session":
      return `transcript started ${new Date(e.at).toISOString()}`;
    case "user":
      return e.senderName ? `${e.senderName}: ${e.text}` : e.text;
    case "assistant":
      return e.toolCalls?.length ? `${e.text} (calls ${e.toolCalls.map((c) => c.name).join(", ")})` : e.text;
    case "tool_result":
      return e.content;
    case "compaction":
      return `summary of the earlier conversation: ${e.summary}`;
    case "writer":
      return e.runId === NEW_TRANSCRIPT
        ? "the transcript was started anew (claims older than this are late ones)"
        : `run ${e.runId} took the session`;
    case "outcome":
      return `run ${e.runId} ${e.status}${e.stopReason ? ` (${e.stopReason})` : ""}${e.error ? `: ${e.error}` : ""}`;
  }
}
