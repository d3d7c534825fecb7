import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { clearAuthState, isLinked, useAtomicAuthState } from "../src/index.js";

const dirs: string[] = [];
const tempDir = () => {
  const root = mkdtempSync(join(tmpdir(), "wa-auth-"));
  dirs.push(root);
  return join(root, "whatsapp", "default");
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
/** What a successful pairing adds to creds (the signed device identity). */
const PAIRED = { details: Buffer.from([1, 2, 3]), accountSignature: Buffer.from([4]) };
const mode = (path: string) => statSync(path).mode & 0o777;

describe("whatsapp auth state on disk", () => {
  it("keeps the folder 0700 and every file 0600, and reads back what it wrote (Buffers included)", async () => {
    const dir = tempDir();
    const first = await useAtomicAuthState(dir);
    first.state.creds.me = { id: "15550001111:7@s.whatsapp.net", lid: "99887766:7@lid", name: "Hub" };
    first.state.creds.account = PAIRED;
    await first.saveCreds();
    await first.state.keys.set({
      "pre-key": { "1": { public: Buffer.from([1, 2, 3]), private: Buffer.from([4]) } },
    });
    expect(mode(dir)).toBe(0o700);
    for (const name of readdirSync(dir)) expect(mode(join(dir, name))).toBe(0o600);
    expect(readdirSync(dir).sort()).toEqual(["creds.json", "pre-key-1.json"]);
    const again = await useAtomicAuthState(dir);
    expect(again.state.creds.me?.id).toBe("15550001111:7@s.whatsapp.net");
    expect(again.state.creds.noiseKey.private).toEqual(first.state.creds.noiseKey.private);
    const keys = await again.state.keys.get("pre-key", ["1", "2"]);
    expect(Buffer.from(keys["1"]?.public ?? [])).toEqual(Buffer.from([1, 2, 3]));
    expect(keys["2"]).toBeUndefined();
    expect(await isLinked(dir)).toBe(true);
  });

  it("tightens a folder created with looser modes", async () => {
    const dir = tempDir();
    await useAtomicAuthState(dir);
    spawnSync("chmod", ["0755", dir]);
    await useAtomicAuthState(dir);
    expect(mode(dir)).toBe(0o700);
  });

  it("a key set to null is deleted; concurrent writes to one file leave one whole file", async () => {
    const dir = tempDir();
    const { state } = await useAtomicAuthState(dir);
    const writes = Array.from({ length: 50 }, (_, i) =>
      state.keys.set({ session: { "a:1": Buffer.from(`session ${i} `.repeat(200)) as never } }),
    );
    await Promise.all(writes);
    expect(readdirSync(dir)).toEqual(["session-a-1.json"]);
    expect(() => JSON.parse(readFileSync(join(dir, "session-a-1.json"), "utf8"))).not.toThrow();
    await state.keys.set({ session: { "a:1": null } });
    expect(readdirSync(dir)).toEqual([]);
  });

  it("a process killed while writing creds leaves the previous creds intact", async () => {
    const dir = tempDir();
    const { state, saveCreds } = await useAtomicAuthState(dir);
    state.creds.me = { id: "15550001111:7@s.whatsapp.net" };
    state.creds.account = PAIRED;
    await saveCreds();
    const before = readFileSync(join(dir, "creds.json"), "utf8");
    // A writer killed (SIGKILL) in the middle of its loop of saves.
    const writer = fileURLToPath(new URL("./creds-writer.ts", import.meta.url));
    const child = spawnSync(process.execPath, ["--import", "tsx", writer, dir], {
      timeout: 20_000,
      killSignal: "SIGKILL",
    });
    expect(child.signal).toBe("SIGKILL");
    const after = readFileSync(join(dir, "creds.json"), "utf8");
    expect(() => JSON.parse(after)).not.toThrow();
    expect(after.length).toBeGreaterThanOrEqual(before.length - 100);
    expect(await isLinked(dir)).toBe(true);
    await useAtomicAuthState(dir);
    expect(readdirSync(dir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("an unreadable creds.json is a clear error, never a silent new identity", async () => {
    const dir = tempDir();
    await useAtomicAuthState(dir);
    writeFileSync(join(dir, "creds.json"), '{"noiseKey": {"priv');
    await expect(useAtomicAuthState(dir)).rejects.toThrow(/cannot be read.*hub channels login whatsapp/);
    expect(await isLinked(dir)).toBe(false);
  });

  it("a pairing code requested but never confirmed is not a link", async () => {
    const dir = tempDir();
    const { state, saveCreds } = await useAtomicAuthState(dir);
    state.creds.me = { id: "15550001111@s.whatsapp.net", name: "~" };
    await saveCreds();
    expect(await isLinked(dir)).toBe(false);
  });

  it("clearing removes every credential (after a logout)", async () => {
    const dir = tempDir();
    const { state, saveCreds } = await useAtomicAuthState(dir);
    state.creds.me = { id: "15550001111:7@s.whatsapp.net" };
    state.creds.account = PAIRED;
    await saveCreds();
    await clearAuthState(dir);
    expect(readdirSync(dir)).toEqual([]);
    expect(await isLinked(dir)).toBe(false);
  });
});
