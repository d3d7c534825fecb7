import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";

/** The workspace files given to the model, in the order they are read and shown. */
export const BOOTSTRAP_FILE_NAMES = ["AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md", "TOOLS.md"] as const;

/** Default caps: characters per file and in all, so a large file cannot crowd out the conversation. */
export const DEFAULT_BOOTSTRAP_LIMITS = { perFileChars: 20_000, totalChars: 60_000 } as const;

/** One workspace file as given to the model. */
export interface BootstrapFile {
  /** The file name, e.g. `USER.md`. */
  name: string;
  /** What the model sees: the file's text, cut to its cap and followed by a marker line when truncated. */
  content: string;
  /** The file's full length in characters (UTF-16 code units), before any truncation. */
  chars: number;
  /** Whether `content` is only the beginning of the file. */
  truncated: boolean;
}

/** The workspace files for the system prompt and what the operator should know about them. */
export interface WorkspaceBootstrap {
  files: BootstrapFile[];
  /** Operator-facing sentences: truncated, omitted or unreadable files. Empty when all is well. */
  diagnostics: string[];
}

/** Caps on how much workspace text reaches the model. */
export interface BootstrapLimits {
  /** Most characters of one file (default 20,000). */
  perFileChars?: number;
  /** Most characters of all files together (default 60,000); marker lines are not counted. */
  totalChars?: number;
}

/**
 * Reads `AGENTS.md`, `SOUL.md`, `USER.md`, `MEMORY.md` and `TOOLS.md` (in
 * that order) from the agent's workspace directory. Missing files, and a
 * missing directory, are skipped silently; blank files are skipped too. A file
 * over its cap, or over what is left of the total cap, is cut and ends with a
 * visible marker line; files after the total cap is used up are omitted. Never
 * throws: unreadable files become diagnostics.
 */
export async function loadWorkspaceBootstrap(
  workspaceDir: string,
  limits?: BootstrapLimits,
): Promise<WorkspaceBootstrap> {
  const perFile = cap(limits?.perFileChars, DEFAULT_BOOTSTRAP_LIMITS.perFileChars);
  const total = cap(limits?.totalChars, DEFAULT_BOOTSTRAP_LIMITS.totalChars);
  const files: BootstrapFile[] = [];
  const diagnostics: string[] = [];
  try {
    if (!(await stat(workspaceDir)).isDirectory()) {
      diagnostics.push(
        `The agent workspace ${workspaceDir} is not a directory; no workspace files are used.`,
      );
      return { files, diagnostics };
    }
  } catch (error) {
    // No workspace directory is a normal setup; other failures surface through the reads below.
    if (isMissing(error)) return { files, diagnostics };
  }
  let used = 0;
  for (const name of BOOTSTRAP_FILE_NAMES) {
    let text: string;
    try {
      text = await readFile(join(workspaceDir, name), "utf8");
    } catch (error) {
      // Absent files are the normal case (every file is optional); anything else the operator should see.
      if (isMissing(error)) continue;
      diagnostics.push(`${name} could not be read and is not given to the model (${errorText(error)}).`);
      continue;
    }
    if (text.trim() === "") continue;
    const remaining = total - used;
    if (remaining <= 0) {
      diagnostics.push(
        `${name} (${text.length} characters) is not given to the model: the workspace files before it ` +
          `already use the ${total}-character total (agent.bootstrap.totalChars).`,
      );
      continue;
    }
    const allowed = Math.min(perFile, remaining);
    if (text.length <= allowed) {
      files.push({ name, content: text, chars: text.length, truncated: false });
      used += text.length;
      continue;
    }
    const kept = cutAt(text, allowed);
    const marker = `[… truncated: showing ${kept.length} of ${text.length} characters of ${name}]`;
    files.push({
      name,
      content: `${kept.trimEnd()}\n\n${marker}`,
      chars: text.length,
      truncated: true,
    });
    used += kept.length;
    diagnostics.push(
      allowed < perFile
        ? `${name} is ${text.length} characters; only the first ${kept.length} are given to the model ` +
            `because the workspace files reached the ${total}-character total (agent.bootstrap.totalChars).`
        : `${name} is ${text.length} characters; only the first ${kept.length} are given to the model ` +
            `(agent.bootstrap.perFileChars).`,
    );
  }
  return { files, diagnostics };
}

// A bad configured value falls back to the default rather than silently dropping every file.
function cap(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value >= 0 ? Math.floor(value) : fallback;
}

// Never split a surrogate pair: the model would get a broken character.
function cutAt(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}

function isMissing(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "ENOENT";
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
