import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));
const stateDir = mkdtempSync(join(tmpdir(), "hub-pipe-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

/** Runs `hub <args>` with its stdout a pipe whose reader has gone away (as `| head` does once it has its lines). */
function runIntoClosedPipe(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], {
      env: { ...process.env, HUB_STATE_DIR: stateDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Closed before the command writes a byte: its first write fails with EPIPE.
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

describe("hub output into a pipe closed early", { timeout: 60_000 }, () => {
  it("`hub config schema | head`: ends quietly with 0, no EPIPE stack trace", async () => {
    const { code, stderr } = await runIntoClosedPipe(["config", "schema"]);
    expect(stderr).not.toContain("EPIPE");
    expect(stderr).not.toContain("Unhandled");
    expect(code).toBe(0);
  });
});
