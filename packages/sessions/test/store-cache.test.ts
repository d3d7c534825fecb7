import { appendFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureLogs, createLogger } from "@hub/core";
import { afterEach, describe, expect, it } from "vitest";
import { FileSessionStore } from "../src/store.js";

const logger = createLogger({ level: "silent" });
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const stateDir = () => {
  const d = mkdtempSync(join(tmpdir(), "store-cache-"));
  dirs.push(d);
  return d;
};
const user = (text: string) => ({ type: "user", runId: "r", text, at: 1 }) as const;

describe("SessionStore's in-memory copies", () => {
  it("a cached transcript still sees lines appended by another process", async () => {
    const dir = stateDir();
    const mine = new FileSessionStore(dir, logger);
    const other = new FileSessionStore(dir, logger);
    const { sessionId } = await mine.resolve("agent:main:x");
    await mine.append(sessionId, [user("one")]);
    expect((await mine.read(sessionId)).map((e) => e.type)).toEqual(["session", "user"]);
    await other.append(sessionId, [user("two")]);
    await mine.append(sessionId, [user("three")]);
    const texts = (await mine.read(sessionId)).flatMap((e) => (e.type === "user" ? [e.text] : []));
    expect(texts).toEqual(["one", "two", "three"]);
  });

  it("a line still being written is read once it is whole", async () => {
    const dir = stateDir();
    const store = new FileSessionStore(dir, logger);
    const { sessionId } = await store.resolve("agent:main:y");
    const path = join(dir, "transcripts", `${sessionId}.jsonl`);
    const line = JSON.stringify(user("late"));
    appendFileSync(path, line.slice(0, 10));
    expect(await store.read(sessionId)).toHaveLength(1);
    appendFileSync(path, `${line.slice(10)}\n`);
    expect((await store.read(sessionId)).at(-1)).toMatchObject({ type: "user", text: "late" });
  });

  it("a cached index follows a reset made by another process", async () => {
    const dir = stateDir();
    const mine = new FileSessionStore(dir, logger);
    const other = new FileSessionStore(dir, logger);
    const first = await mine.resolve("agent:main:z");
    expect((await mine.get("agent:main:z"))?.sessionId).toBe(first.sessionId);
    const second = await other.reset("agent:main:z");
    expect((await mine.get("agent:main:z"))?.sessionId).toBe(second.sessionId);
  });

  it("an index a crash left empty while creating it reads as no session, and the key starts one", async () => {
    const dir = stateDir();
    const store = new FileSessionStore(dir, logger);
    await store.resolve("agent:main:torn");
    const [index] = readdirSync(join(dir, "sessions"));
    // What a crash between creating a new session's index and writing it leaves.
    writeFileSync(join(dir, "sessions", index!), "");
    const fresh = new FileSessionStore(dir, logger);
    expect(await fresh.get("agent:main:torn")).toBeUndefined();
    const started = await fresh.resolve("agent:main:torn");
    expect((await new FileSessionStore(dir, logger).get("agent:main:torn"))?.sessionId).toBe(
      started.sessionId,
    );
    expect(readdirSync(join(dir, "sessions"))).toEqual([index]);
  });

  it("an index cut short by a failed write reads as no session with a warning, and the key starts one", async () => {
    const dir = stateDir();
    await new FileSessionStore(dir, logger).resolve("agent:main:cut");
    const [index] = readdirSync(join(dir, "sessions"));
    // A key's first index is written in place: a full disk can leave part of it.
    writeFileSync(join(dir, "sessions", index!), '{"sessionKey":"agent:main:cut","sessionI');
    const { logger: watched, lines } = captureLogs("warn");
    const fresh = new FileSessionStore(dir, watched);
    expect(await fresh.get("agent:main:cut")).toBeUndefined();
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ sessionKey: "agent:main:cut", msg: expect.stringContaining("cut short") }),
    ]);
    const started = await fresh.resolve("agent:main:cut");
    expect((await new FileSessionStore(dir, logger).get("agent:main:cut"))?.sessionId).toBe(
      started.sessionId,
    );
    expect(readdirSync(join(dir, "sessions"))).toEqual([index]);
  });

  it("a new session's transcript reads back the same from its creator's copy and from the disk", async () => {
    const dir = stateDir();
    const mine = new FileSessionStore(dir, logger);
    const { sessionId } = await mine.resolve("agent:main:new");
    await mine.append(sessionId, [user("first é")]);
    await mine.append(sessionId, [user("second")]);
    const fromDisk = await new FileSessionStore(dir, logger).read(sessionId);
    expect(await mine.read(sessionId)).toEqual(fromDisk);
    expect(fromDisk.map((e) => e.type)).toEqual(["session", "user", "user"]);
  });

  it("a whole index this version cannot read is an error naming the file, not a new session", async () => {
    const dir = stateDir();
    const first = await new FileSessionStore(dir, logger).resolve("agent:main:newer");
    const [index] = readdirSync(join(dir, "sessions"));
    // A newer version's record (a field this one does not know): its history must not be left behind.
    writeFileSync(join(dir, "sessions", index!), JSON.stringify({ ...first, origin: "v2" }));
    const fresh = new FileSessionStore(dir, logger);
    await expect(fresh.get("agent:main:newer")).rejects.toThrow(
      `The session index ${join(dir, "sessions", index!)}`,
    );
    await expect(fresh.resolve("agent:main:newer")).rejects.toThrow("remove it to start the session again");
    expect(readdirSync(join(dir, "sessions"))).toEqual([index]);
  });

  it("an index left empty or cut short by a crash does not break the operator's list of sessions", async () => {
    for (const torn of ["", '{"sessionKey":"agent:ma']) {
      const dir = stateDir();
      const store = new FileSessionStore(dir, logger);
      await store.resolve("agent:main:ok");
      await store.resolve("agent:main:torn");
      const [first] = readdirSync(join(dir, "sessions"));
      writeFileSync(join(dir, "sessions", first!), torn);
      expect(await new FileSessionStore(dir, logger).list()).toHaveLength(1);
    }
  });
});
