import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadWorkspaceBootstrap } from "../../src/context/bootstrap.js";

let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-bootstrap-"));
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function write(name: string, content: string): void {
  fs.writeFileSync(path.join(dir, name), content);
}

describe("loadWorkspaceBootstrap", () => {
  it("reads the files in the fixed order, whatever order they were created in", async () => {
    write("TOOLS.md", "tools");
    write("USER.md", "user");
    write("AGENTS.md", "agents");
    write("MEMORY.md", "memory");
    write("SOUL.md", "soul");
    write("NOTES.md", "not a bootstrap file");
    const result = await loadWorkspaceBootstrap(dir);
    expect(result.files.map((f) => f.name)).toEqual([
      "AGENTS.md",
      "SOUL.md",
      "USER.md",
      "MEMORY.md",
      "TOOLS.md",
    ]);
    expect(result.files[0]).toEqual({ name: "AGENTS.md", content: "agents", chars: 6, truncated: false });
    expect(result.diagnostics).toEqual([]);
  });

  it("skips missing and blank files silently", async () => {
    write("SOUL.md", "soul");
    write("USER.md", "  \n\n");
    const result = await loadWorkspaceBootstrap(dir);
    expect(result.files.map((f) => f.name)).toEqual(["SOUL.md"]);
    expect(result.diagnostics).toEqual([]);
  });

  it("treats a missing workspace directory as empty", async () => {
    const result = await loadWorkspaceBootstrap(path.join(dir, "does-not-exist"));
    expect(result).toEqual({ files: [], diagnostics: [] });
  });

  it("reports a workspace path that is not a directory", async () => {
    write("plain-file", "x");
    const result = await loadWorkspaceBootstrap(path.join(dir, "plain-file"));
    expect(result.files).toEqual([]);
    expect(result.diagnostics).toHaveLength(1);
    expect(result.diagnostics[0]).toContain("is not a directory");
  });

  it("cuts a file over the per-file cap with a visible marker and a diagnostic", async () => {
    write("USER.md", "u".repeat(31_234));
    const result = await loadWorkspaceBootstrap(dir);
    const user = result.files[0]!;
    expect(user.truncated).toBe(true);
    expect(user.chars).toBe(31_234);
    expect(user.content.startsWith("u".repeat(20_000))).toBe(true);
    expect(user.content).not.toContain("u".repeat(20_001));
    expect(user.content.endsWith("[… truncated: showing 20000 of 31234 characters of USER.md]")).toBe(true);
    expect(result.diagnostics).toEqual([
      "USER.md is 31234 characters; only the first 20000 are given to the model " +
        "(agent.bootstrap.perFileChars).",
    ]);
  });

  it("honours custom limits and keeps files at exactly the cap whole", async () => {
    write("AGENTS.md", "a".repeat(10));
    write("SOUL.md", "s".repeat(11));
    const result = await loadWorkspaceBootstrap(dir, { perFileChars: 10, totalChars: 100 });
    expect(result.files[0]).toMatchObject({ content: "a".repeat(10), truncated: false });
    expect(result.files[1]!.content).toBe(
      `${"s".repeat(10)}\n\n[… truncated: showing 10 of 11 characters of SOUL.md]`,
    );
  });

  it("cuts the file that reaches the total cap and omits the ones after it", async () => {
    write("AGENTS.md", "a".repeat(40));
    write("SOUL.md", "s".repeat(40));
    write("USER.md", "u".repeat(5));
    write("TOOLS.md", "t".repeat(7));
    const result = await loadWorkspaceBootstrap(dir, { perFileChars: 50, totalChars: 60 });
    expect(result.files.map((f) => [f.name, f.truncated])).toEqual([
      ["AGENTS.md", false],
      ["SOUL.md", true],
    ]);
    expect(result.files[1]!.content).toBe(
      `${"s".repeat(20)}\n\n[… truncated: showing 20 of 40 characters of SOUL.md]`,
    );
    expect(result.diagnostics).toHaveLength(3);
    expect(result.diagnostics[0]).toContain("SOUL.md is 40 characters; only the first 20");
    expect(result.diagnostics[0]).toContain("agent.bootstrap.totalChars");
    expect(result.diagnostics[1]).toContain("USER.md (5 characters) is not given to the model");
    expect(result.diagnostics[2]).toContain("TOOLS.md (7 characters) is not given to the model");
  });

  it("applies the default total cap of 60000 characters", async () => {
    for (const name of ["AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md"]) write(name, "x".repeat(20_000));
    const result = await loadWorkspaceBootstrap(dir);
    expect(result.files.map((f) => f.name)).toEqual(["AGENTS.md", "SOUL.md", "USER.md"]);
    expect(result.files.every((f) => !f.truncated)).toBe(true);
    expect(result.diagnostics).toHaveLength(1);
    expect(result.diagnostics[0]).toContain("MEMORY.md (20000 characters) is not given to the model");
  });

  it("does not split a surrogate pair when cutting", async () => {
    write("AGENTS.md", `abc${"😀".repeat(5)}`);
    const result = await loadWorkspaceBootstrap(dir, { perFileChars: 6 });
    expect(result.files[0]!.content).toMatch(/^abc😀\n\n\[… truncated: showing 5 of 13 characters/);
  });

  it("turns an unreadable file into a diagnostic instead of throwing", async () => {
    // A directory where a file is expected fails to read on every platform (EISDIR).
    fs.mkdirSync(path.join(dir, "SOUL.md"));
    write("USER.md", "user");
    const result = await loadWorkspaceBootstrap(dir);
    expect(result.files.map((f) => f.name)).toEqual(["USER.md"]);
    expect(result.diagnostics).toHaveLength(1);
    expect(result.diagnostics[0]).toMatch(/^SOUL\.md could not be read and is not given to the model \(/);
  });
});
