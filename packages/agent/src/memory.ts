import { createHash } from "node:crypto";
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { foldForMatching, neutralizeRoleMarkers } from "@hub/core";
import { z } from "zod";
import { forgetWorkspaceBootstrap } from "./context/bootstrap-cache.js";
import { markUntrusted } from "./context/untrusted.js";
import type { ToolLists } from "./tool-policy.js";
import type { AgentTool } from "./tools.js";

/**
 * Whose notes a run reads and writes: the operator's (`MEMORY.md`, loaded into
 * every system prompt as operator text), or notes kept for one chat of
 * untrusted people, which never enter the system prompt and come back marked untrusted.
 */
export type MemoryTrust = "operator" | "untrusted";

/** The memory tools' names: off by default in groups. */
export const MEMORY_TOOL_NAMES = ["memory_read", "memory_write"] as const;

const MemoryWriteSchema = z.object({ note: z.string().min(1).max(2000) });

// Every kind of line break (a note must stay one list item: no forged heading or instruction line).
const LINE_BREAKS = /[\r\n\v\f\u0085\u2028\u2029]+/g;

/** A note as stored: one line, folded, without control characters, role markers neutralized. */
export function memoryNote(note: string): string {
  const oneLine = foldForMatching(note)
    .replace(LINE_BREAKS, " ")
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
    .replace(/[\u0000-\u001f\u007f]/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return neutralizeRoleMarkers(oneLine);
}

/** Where a chat's untrusted notes live: outside the files the system prompt loads. */
function untrustedPath(workspaceDir: string, sessionKey: string): string {
  const id = createHash("sha256").update(sessionKey).digest("hex").slice(0, 32);
  return join(workspaceDir, "untrusted-memory", `${id}.md`);
}

/**
 * `memory_read` and `memory_write`. With `operator` trust they use the
 * workspace's MEMORY.md; with `untrusted` trust, a file per chat that no
 * system prompt loads, read back marked untrusted.
 */
export function memoryTools(workspaceDir: string, trust: MemoryTrust = "operator"): AgentTool[] {
  const path = (sessionKey: string) =>
    trust === "operator" ? join(workspaceDir, "MEMORY.md") : untrustedPath(workspaceDir, sessionKey);
  return [
    {
      spec: {
        name: "memory_read",
        description:
          trust === "operator"
            ? "Reads your long-term memory notes (MEMORY.md)."
            : "Reads the notes kept for this chat (written by its members).",
        parameters: { type: "object", properties: {}, additionalProperties: false },
      },
      run: async (_args, context) => {
        let text = "";
        try {
          text = await readFile(path(context.sessionKey), "utf8");
        } catch {
          // No notes yet.
        }
        if (!text) return "(memory is empty)";
        return trust === "operator" ? text : markUntrusted(text, "notes written by members of this chat");
      },
    },
    {
      spec: {
        name: "memory_write",
        description:
          trust === "operator"
            ? "Appends a note to your long-term memory (MEMORY.md). Keep notes short and factual."
            : "Appends a note to this chat's notes. Keep notes short and factual.",
        parameters: {
          type: "object",
          properties: { note: { type: "string" } },
          required: ["note"],
          additionalProperties: false,
        },
      },
      run: async (args, context) => {
        const note = memoryNote(MemoryWriteSchema.parse(args).note);
        if (!note) return "Nothing to save: the note is empty.";
        const file = path(context.sessionKey);
        await mkdir(dirname(file), { recursive: true, mode: 0o700 });
        await appendFile(file, `- ${note}\n`, { mode: 0o600 });
        // MEMORY.md is a workspace file: the next run reads it again (the watch would too, a moment later).
        forgetWorkspaceBootstrap(workspaceDir);
        return "Saved to memory.";
      },
    },
  ];
}

/**
 * The tool level that keeps memory tools off in group chats unless the
 * channel's or the group's `tools.allow` names them explicitly.
 */
export function groupMemoryDefault(
  chatType: "direct" | "group" | "channel",
  explicit: ReadonlyArray<ToolLists | undefined>,
): ToolLists {
  if (chatType === "direct") return {};
  const named = (name: string) => explicit.some((l) => l?.allow?.includes(name));
  return { deny: MEMORY_TOOL_NAMES.filter((name) => !named(name)) };
}
