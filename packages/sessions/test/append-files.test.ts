import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AppendFiles, openFilesBudget } from "../src/append-files.js";

const dirs: string[] = [];
const files: AppendFiles[] = [];
afterEach(() => {
  for (const f of files.splice(0)) f.closeAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const setup = (idleMs?: number, max?: number) => {
  const dir = mkdtempSync(join(tmpdir(), "append-files-"));
  dirs.push(dir);
  const appender = new AppendFiles(idleMs, max);
  files.push(appender);
  return { dir, appender };
};

/** How many of this process's descriptors are open on `path` (Linux's /proc). */
function openOn(path: string): number {
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false; // the descriptor readdir itself used, closed by now
    }
  }).length;
}

const closed = async (path: string) => {
  for (let i = 0; i < 100 && openOn(path) > 0; i++) await new Promise((r) => setTimeout(r, 20));
  return openOn(path) === 0;
};

describe("AppendFiles (transcripts' kept-open files)", () => {
  it("appends through one kept-open file, each append whole", async () => {
    const { dir, appender } = setup();
    const path = join(dir, "t.jsonl");
    writeFileSync(path, "");
    await Promise.all([appender.append(path, "one\n"), appender.append(path, "two\n")]);
    await appender.append(path, "three\n");
    expect(readFileSync(path, "utf8")).toBe("one\ntwo\nthree\n");
    expect(openOn(path)).toBe(1);
  });

  it("never makes a missing file: an append to one moved aside fails and writes nothing", async () => {
    const { dir, appender } = setup();
    const path = join(dir, "moved.jsonl");
    await expect(appender.append(path, "orphan\n")).rejects.toMatchObject({ code: "ENOENT" });
    expect(readdirSync(dir)).toEqual([]);
    await appender.create(path, "header\n");
    renameSync(path, join(dir, "aside.jsonl"));
    appender.closeAll();
    await expect(appender.append(path, "late\n")).rejects.toMatchObject({ code: "ENOENT" });
    expect(readdirSync(dir)).toEqual(["aside.jsonl"]);
  });

  it("creates a file only when it does not exist, keeping it open for the appends that follow", async () => {
    const { dir, appender } = setup();
    const path = join(dir, "new.jsonl");
    const created = await appender.create(path, "first\n");
    expect(created).toEqual({ dev: statSync(path).dev, ino: statSync(path).ino });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(openOn(path)).toBe(1);
    await appender.append(path, "second\n");
    expect(openOn(path)).toBe(1);
    // Existing (kept open here, or made by anyone else): nothing is written.
    expect(await appender.create(path, "again\n")).toBeUndefined();
    const other = join(dir, "other.jsonl");
    writeFileSync(other, "theirs\n");
    expect(await appender.create(other, "mine\n")).toBeUndefined();
    expect(readFileSync(path, "utf8")).toBe("first\nsecond\n");
    expect(readFileSync(other, "utf8")).toBe("theirs\n");
    // The failed create left nothing behind that a later append would trip on.
    await appender.append(other, "more\n");
    expect(readFileSync(other, "utf8")).toBe("theirs\nmore\n");
  });

  it("an append while a create of the same existing file is pending appends (it does not share the create's EEXIST)", async () => {
    const { dir, appender } = setup();
    const path = join(dir, "exists.jsonl");
    writeFileSync(path, "header\n");
    const [created] = await Promise.all([appender.create(path, "mine\n"), appender.append(path, "line\n")]);
    expect(created).toBeUndefined();
    expect(readFileSync(path, "utf8")).toBe("header\nline\n");
    await appender.append(path, "next\n");
    expect(readFileSync(path, "utf8")).toBe("header\nline\nnext\n");
    expect(openOn(path)).toBe(1);
  });

  it("an append while a create of the same new file is pending lands after the create's first line", async () => {
    const { dir, appender } = setup();
    const path = join(dir, "new.jsonl");
    const [created] = await Promise.all([appender.create(path, "header\n"), appender.append(path, "line\n")]);
    expect(created).toBeDefined();
    expect(readFileSync(path, "utf8")).toBe("header\nline\n");
    expect(openOn(path)).toBe(1);
  });

  it("closes a file unused for idleMs, and opens it again for the next append", async () => {
    const { dir, appender } = setup(100);
    const path = join(dir, "idle.jsonl");
    await appender.create(path, "a\n");
    expect(openOn(path)).toBe(1);
    // The sweep runs every second at the least.
    await new Promise((r) => setTimeout(r, 1300));
    expect(await closed(path)).toBe(true);
    await appender.append(path, "b\n");
    expect(openOn(path)).toBe(1);
    expect(readFileSync(path, "utf8")).toBe("a\nb\n");
  });

  it("keeps at most `max` files open, closing the least recently used first", async () => {
    const { dir, appender } = setup(60_000, 2);
    const [a, b, c] = ["a", "b", "c"].map((n) => join(dir, `${n}.jsonl`)) as [string, string, string];
    await appender.create(a, "a1\n");
    await appender.create(b, "b1\n");
    await appender.append(a, "a2\n");
    await appender.create(c, "c1\n");
    // b was used least recently: it went; a (used again) stayed.
    expect(await closed(b)).toBe(true);
    expect([openOn(a), openOn(c)]).toEqual([1, 1]);
    await appender.append(b, "b2\n");
    expect(readFileSync(b, "utf8")).toBe("b1\nb2\n");
    expect(readFileSync(a, "utf8")).toBe("a1\na2\n");
  });

  it("closeAll closes every file", async () => {
    const { dir, appender } = setup();
    const paths = ["x", "y"].map((n) => join(dir, `${n}.jsonl`));
    for (const p of paths) await appender.create(p, "line\n");
    appender.closeAll();
    for (const p of paths) expect(await closed(p)).toBe(true);
  });

  it("keeps a quarter of the process's open-file limit open, within 64 and 4,096", () => {
    const limits = (soft: string) =>
      `Limit                     Soft Limit           Hard Limit           Units     \nMax open files            ${soft}                1048576              files     \n`;
    expect(openFilesBudget(limits("20000"))).toBe(4096);
    expect(openFilesBudget(limits("4096"))).toBe(1024);
    expect(openFilesBudget(limits("1024"))).toBe(256);
    expect(openFilesBudget(limits("128"))).toBe(64);
    expect(openFilesBudget(limits("unlimited"))).toBe(4096);
    // Not Linux, or no /proc: the former fixed budget.
    expect(openFilesBudget("")).toBe(256);
    // This process's own limit reads as a number in range.
    expect(openFilesBudget()).toBeGreaterThanOrEqual(64);
  });
});
