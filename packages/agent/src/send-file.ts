import { open, realpath } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { humanBytes, type Outbox, type OutboxFile, safeFilename } from "@hub/core";
import { z } from "zod";
import type { AgentTool } from "./tools.js";

/** Sends a file from the outbox as the next segment of the run's reply (after the text so far). */
export type SendFileInReply = (file: OutboxFile, caption?: string) => Promise<void>;

const SendFileSchema = z
  .object({
    path: z.string().min(1).max(1000).optional(),
    content: z.string().optional(),
    filename: z.string().min(1).max(255).optional(),
    caption: z.string().max(4000).optional(),
  })
  .strict();

/** Files the memory tools own: sending them would bypass memory's own policy (off in groups). */
function isMemoryFile(relativePath: string): boolean {
  const first = relativePath.split(sep)[0] ?? "";
  return relativePath === "MEMORY.md" || first === "untrusted-memory";
}

/** Why a `send_file` request was refused, said to the model. */
class Refused extends Error {}

/**
 * Reads a workspace file for sending: the path must resolve (symbolic links
 * followed) inside the workspace, name a regular file, and hold at most
 * `maxBytes`; the size is checked on the open file, and no more than
 * `maxBytes` is read, so a file growing meanwhile cannot slip past the cap.
 */
export async function readWorkspaceFile(
  workspaceDir: string,
  path: string,
  maxBytes: number,
): Promise<{ bytes: Buffer; name: string }> {
  const root = await realpath(workspaceDir).catch(() => {
    throw new Refused("the workspace does not exist yet, so it has no files to send");
  });
  let real: string;
  try {
    real = await realpath(resolve(root, path));
  } catch {
    throw new Refused(`there is no file "${path}" in the workspace`);
  }
  const rel = relative(root, real);
  if (!rel || rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel))
    throw new Refused(`"${path}" is outside the workspace; only files inside it can be sent`);
  if (isMemoryFile(rel)) throw new Refused("memory files are not sent; use memory_read");
  const handle = await open(real, "r");
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new Refused(`"${path}" is not a regular file`);
    if (info.size > maxBytes) throw new Refused(tooLarge(info.size, maxBytes));
    const bytes = Buffer.alloc(info.size);
    const { bytesRead } = await handle.read(bytes, 0, info.size, 0);
    return { bytes: bytes.subarray(0, bytesRead), name: rel };
  } finally {
    await handle.close();
  }
}

function tooLarge(size: number, maxBytes: number): string {
  return `the file is ${humanBytes(size)}; the limit is ${humanBytes(maxBytes)} (limits.maxAttachmentBytes)`;
}

/**
 * `send_file`: sends a file to the current chat, in its place in the reply
 * (after what the agent said so far): either a file from the workspace
 * (`path`, sandboxed to the workspace) or text the agent wrote (`content` +
 * `filename`). The bytes go to the outbox; the reply queue carries a reference.
 */
export function sendFileTool(options: { workspaceDir: string; outbox: Outbox; maxBytes: number }): AgentTool {
  return {
    spec: {
      name: "send_file",
      description:
        "Sends a file to this chat, after what you wrote so far. Give `path` (a file in your workspace) or `content` (text you write) with `filename`; `caption` is optional.",
      parameters: {
        type: "object",
        properties: {
          path: { type: "string", description: "A file inside the workspace, relative to it." },
          content: { type: "string", description: "The file's text, when you write the file yourself." },
          filename: { type: "string", description: "The name the recipient sees (required with content)." },
          caption: { type: "string" },
        },
        additionalProperties: false,
      },
    },
    run: async (args, context) => {
      if (!context.sendFile) return "Refused: this run has no reply to send a file in.";
      const parsed = SendFileSchema.safeParse(args);
      if (!parsed.success) return `Refused: ${parsed.error.issues[0]?.message ?? "invalid arguments"}.`;
      try {
        const { bytes, name } = await fileOf(parsed.data, options);
        const file = await options.outbox.put(bytes, safeFilename(name));
        await context.sendFile(file, parsed.data.caption);
        return `Queued ${file.filename} (${humanBytes(file.size)}) for delivery in this chat.`;
      } catch (error) {
        if (error instanceof Refused) return `Refused: ${error.message}.`;
        throw error;
      }
    },
  };
}

async function fileOf(
  args: z.infer<typeof SendFileSchema>,
  options: { workspaceDir: string; maxBytes: number },
): Promise<{ bytes: Buffer; name: string }> {
  if ((args.path === undefined) === (args.content === undefined))
    throw new Refused("give either `path` or `content`, not both or neither");
  if (args.path !== undefined) {
    const read = await readWorkspaceFile(options.workspaceDir, args.path, options.maxBytes);
    return { bytes: read.bytes, name: args.filename ?? read.name };
  }
  if (!args.filename) throw new Refused("`filename` is required with `content`");
  const bytes = Buffer.from(args.content ?? "", "utf8");
  if (bytes.byteLength > options.maxBytes) throw new Refused(tooLarge(bytes.byteLength, options.maxBytes));
  return { bytes, name: args.filename };
}
