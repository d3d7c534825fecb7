import { chmodSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@hub/core";
import { FileSessionStore } from "@hub/sessions";
import { describe, expect, it } from "vitest";
import { ensureStateDir, resolveGatewayToken } from "../src/state.js";

const mode = (path: string) => statSync(path).mode & 0o777;

describe("state files", () => {
  it("an existing state directory with a loose mode is tightened to 0700 at start", () => {
    const dir = mkdtempSync(join(tmpdir(), "hub-state-"));
    chmodSync(dir, 0o755);
    ensureStateDir(dir);
    expect(mode(dir)).toBe(0o700);
    const fresh = join(dir, "new");
    ensureStateDir(fresh);
    expect(mode(fresh)).toBe(0o700);
  });

  it("the generated gateway token is stored once, owner-only, and reused", () => {
    const dir = mkdtempSync(join(tmpdir(), "hub-state-"));
    const first = resolveGatewayToken(dir, undefined);
    expect(first.generated).toBe(true);
    expect(mode(first.path)).toBe(0o600);
    const second = resolveGatewayToken(dir, undefined);
    expect(second).toMatchObject({ token: first.token, generated: false });
  });

  it("transcripts and session index files are owner-only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hub-state-"));
    const store = new FileSessionStore(dir, createLogger({ level: "silent" }));
    const session = await store.resolve("agent:main:main");
    expect(mode(join(dir, "transcripts", `${session.sessionId}.jsonl`))).toBe(0o600);
    expect(mode(join(dir, "transcripts"))).toBe(0o700);
    expect(mode(join(dir, "sessions"))).toBe(0o700);
  });
});
