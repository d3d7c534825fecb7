import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Outbox, type OutboxFile } from "@hub/core";
import { describe, expect, it } from "vitest";
import { sendFileTool } from "../src/send-file.js";

/** A workspace with a file, a secret next to it (outside), and an outbox; the tool with a 1 KB cap. */
function setup() {
  const root = mkdtempSync(join(tmpdir(), "hub-send-file-"));
  const workspace = join(root, "workspace");
  mkdirSync(join(workspace, "reports"), { recursive: true });
  writeFileSync(join(workspace, "reports", "q3.csv"), "q,total\n3,42\n");
  writeFileSync(join(workspace, "big.bin"), Buffer.alloc(2048, 1));
  writeFileSync(join(workspace, "MEMORY.md"), "- private note\n");
  writeFileSync(join(root, "secret.txt"), "TOP SECRET");
  symlinkSync(join(root, "secret.txt"), join(workspace, "link-out.txt"));
  const outbox = new Outbox(join(root, "outbox"));
  const sent: Array<{ file: OutboxFile; caption?: string | undefined }> = [];
  const tool = sendFileTool({ workspaceDir: workspace, outbox, maxBytes: 1024 });
  const context = {
    runId: "r1",
    sessionKey: "agent:main:telegram:direct:1",
    signal: new AbortController().signal,
    sendFile: async (file: OutboxFile, caption?: string) => void sent.push({ file, caption }),
  };
  const outboxFiles = () => {
    try {
      return readdirSync(join(root, "outbox"));
    } catch {
      return [];
    }
  };
  return { root, tool, context, sent, outbox, outboxFiles };
}

describe("send_file", () => {
  it("sends a workspace file: bytes copied to the outbox, the reply gets the reference and the caption", async () => {
    const { tool, context, sent, outbox } = setup();
    const result = await tool.run({ path: "reports/q3.csv", caption: "Q3" }, context);
    expect(result).toMatch(/^Queued q3\.csv \(13 B\)/);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      file: { filename: "q3.csv", mime: "text/csv", kind: "file" },
      caption: "Q3",
    });
    expect(readFileSync(outbox.pathOf(sent[0]!.file.ref), "utf8")).toBe("q,total\n3,42\n");
  });

  it("sends text the agent wrote, under the file name it chose (made safe)", async () => {
    const { tool, context, sent } = setup();
    await tool.run({ content: "# Notes\n", filename: "../../notes.md" }, context);
    expect(sent[0]?.file).toMatchObject({ filename: "notes.md", mime: "text/markdown", size: 8 });
  });

  it("refuses path traversal, absolute paths and symbolic links leading out of the workspace", async () => {
    const { root, tool, context, sent, outboxFiles } = setup();
    for (const path of [
      "../secret.txt",
      "reports/../../secret.txt",
      join(root, "secret.txt"),
      "link-out.txt",
    ]) {
      const result = await tool.run({ path }, context);
      expect(result).toMatch(/^Refused: .*outside the workspace/);
      expect(result).not.toContain("TOP SECRET");
    }
    expect(await tool.run({ path: "nothing-here.txt" }, context)).toMatch(/^Refused: there is no file/);
    expect(await tool.run({ path: "reports" }, context)).toMatch(/^Refused: .*not a regular file/);
    expect(await tool.run({ path: "MEMORY.md" }, context)).toMatch(/^Refused: memory files are not sent/);
    expect(sent).toEqual([]);
    expect(outboxFiles()).toEqual([]);
  });

  it("refuses files and content over limits.maxAttachmentBytes, saying the limit", async () => {
    const { tool, context, sent, outboxFiles } = setup();
    expect(await tool.run({ path: "big.bin" }, context)).toBe(
      "Refused: the file is 2 KB; the limit is 1 KB (limits.maxAttachmentBytes).",
    );
    expect(await tool.run({ content: "x".repeat(1025), filename: "a.txt" }, context)).toMatch(
      /^Refused: the file is 1 KB; the limit is 1 KB/,
    );
    expect(sent).toEqual([]);
    expect(outboxFiles()).toEqual([]);
  });

  it("refuses unclear requests, and works only in a run with a reply", async () => {
    const { tool, context } = setup();
    expect(await tool.run({ path: "a", content: "b", filename: "c" }, context)).toMatch(
      /either `path` or `content`/,
    );
    expect(await tool.run({ content: "b" }, context)).toMatch(/`filename` is required/);
    expect(await tool.run({ path: 3 }, context)).toMatch(/^Refused: /);
    const { sendFile: _none, ...noReply } = context;
    expect(await tool.run({ content: "b", filename: "b.txt" }, noReply)).toMatch(/no reply/);
  });
});
