import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../../test/support/redis.js";
import { cachedWorkspaceBootstrap, forgetWorkspaceBootstrap } from "../../src/context/bootstrap-cache.js";
import { memoryTools } from "../../src/memory.js";

let dir: string;
const limits = { perFileChars: 20_000, totalChars: 60_000 };

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hub-bootstrap-cache-"));
});

afterEach(() => {
  forgetWorkspaceBootstrap(dir);
  fs.rmSync(dir, { recursive: true, force: true });
});

const texts = async () => (await cachedWorkspaceBootstrap(dir, limits)).files.map((f) => f.content);

describe("cachedWorkspaceBootstrap", () => {
  it("reads the workspace once, and again after a file in it is written, added or removed", async () => {
    fs.writeFileSync(path.join(dir, "AGENTS.md"), "first");
    expect(await texts()).toEqual(["first"]);
    // Reused while nothing changes: the very same result.
    const again = await cachedWorkspaceBootstrap(dir, limits);
    expect(again).toBe(await cachedWorkspaceBootstrap(dir, limits));
    fs.writeFileSync(path.join(dir, "AGENTS.md"), "second");
    await waitFor(async () => (await texts()).join() === "second", "the rewritten file");
    fs.writeFileSync(path.join(dir, "USER.md"), "user");
    await waitFor(async () => (await texts()).join() === "second,user", "the added file");
    fs.rmSync(path.join(dir, "AGENTS.md"));
    await waitFor(async () => (await texts()).join() === "user", "the removed file");
  });

  it("the memory tool's note is in the very next run's workspace files", async () => {
    fs.writeFileSync(path.join(dir, "MEMORY.md"), "- old note\n");
    expect(await texts()).toEqual(["- old note\n"]);
    const write = memoryTools(dir).find((t) => t.spec.name === "memory_write")!;
    await write.run(
      { note: "new note" },
      { runId: "r", sessionKey: "s", signal: new AbortController().signal },
    );
    expect((await texts()).join()).toContain("new note");
  });
});
