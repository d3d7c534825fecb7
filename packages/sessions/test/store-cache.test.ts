import {
  appendFileSync,
  linkSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureLogs, createLogger } from "@hub/core";
import { afterEach, describe, expect, it } from "vitest";
import { FileSessionStore, firstSessionId } from "../src/store.js";

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
    // A key's first session has no index: its first reset creates one.
    await store.reset("agent:main:torn");
    const [index] = readdirSync(join(dir, "sessions"));
    // What a crash between creating a key's index and writing it leaves.
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
    await new FileSessionStore(dir, logger).reset("agent:main:cut");
    await new FileSessionStore(dir, logger).reset("agent:main:cut");
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
    await new FileSessionStore(dir, logger).resolve("agent:main:newer");
    const first = await new FileSessionStore(dir, logger).reset("agent:main:newer");
    const [index] = readdirSync(join(dir, "sessions"));
    // A newer version's record (a field this one does not know): its history must not be left behind.
    writeFileSync(join(dir, "sessions", index!), JSON.stringify({ ...first, origin: "v2" }));
    const fresh = new FileSessionStore(dir, logger);
    await expect(fresh.get("agent:main:newer")).rejects.toThrow(
      `The session index ${join(dir, "sessions", index!)}`,
    );
    await expect(fresh.resolve("agent:main:newer")).rejects.toThrow(
      "remove it to send the key back to its first session",
    );
    expect(readdirSync(join(dir, "sessions"))).toEqual([index]);
  });

  it("an index left empty or cut short by a crash does not break the operator's list of sessions", async () => {
    for (const torn of ["", '{"sessionKey":"agent:ma']) {
      const dir = stateDir();
      const store = new FileSessionStore(dir, logger);
      await store.resolve("agent:main:ok");
      await store.resolve("agent:main:torn");
      await store.reset("agent:main:torn");
      const [index] = readdirSync(join(dir, "sessions"));
      writeFileSync(join(dir, "sessions", index!), torn);
      // The key's first session is not listed either: its index (torn or not) says it moved on.
      expect((await new FileSessionStore(dir, logger).list()).map((r) => r.sessionKey)).toEqual([
        "agent:main:ok",
      ]);
    }
  });
});

describe("FileSessionStore's first sessions (a key never reset)", () => {
  it("are one file, the transcript at an id derived from the key, with no index; another store finds it", async () => {
    const dir = stateDir();
    const created = await new FileSessionStore(dir, logger).resolve("agent:main:one");
    expect(created.sessionId).toBe(firstSessionId("agent:main:one"));
    expect(readdirSync(join(dir, "sessions"))).toEqual([]);
    expect(readdirSync(join(dir, "transcripts"))).toEqual([`${created.sessionId}.jsonl`]);
    const other = new FileSessionStore(dir, logger);
    expect(await other.get("agent:main:one")).toEqual(created);
    expect(await other.resolve("agent:main:one")).toEqual(created);
    expect(await other.list()).toEqual([created]);
  });

  it("a reset moves the key to a new session with an index; every store follows, and lists the key once", async () => {
    const dir = stateDir();
    const mine = new FileSessionStore(dir, logger);
    const first = await mine.resolve("agent:main:two");
    await mine.append(first.sessionId, [user("before")]);
    const other = new FileSessionStore(dir, logger);
    expect(await other.get("agent:main:two")).toEqual(first);
    const second = await mine.reset("agent:main:two");
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(readdirSync(join(dir, "sessions"))).toHaveLength(1);
    expect(await other.get("agent:main:two")).toEqual(second);
    expect(await new FileSessionStore(dir, logger).resolve("agent:main:two")).toEqual(second);
    expect(await other.list()).toEqual([second]);
    // The first session's history stays where it was.
    expect((await other.read(first.sessionId)).map((e) => e.type)).toEqual(["session", "user"]);
  });

  it("a first transcript a crash left empty or with a torn header reads as no session; after waiting for its header, with a warning, the key starts an indexed one", async () => {
    for (const torn of ["", '{"type":"session","sessionId":"k-']) {
      const dir = stateDir();
      const { logger: watched, lines } = captureLogs("warn");
      const store = new FileSessionStore(dir, watched);
      const sessionId = firstSessionId("agent:main:torn");
      writeFileSync(join(dir, "transcripts", `${sessionId}.jsonl`), torn);
      expect(await store.get("agent:main:torn")).toBeUndefined();
      expect(await store.list()).toEqual([]);
      const started = await store.resolve("agent:main:torn");
      expect(started.sessionId).not.toBe(sessionId);
      expect(lines.map((l) => JSON.parse(l).msg)).toEqual([expect.stringContaining("has no whole header")]);
      expect(await new FileSessionStore(dir, logger).get("agent:main:torn")).toEqual(started);
      expect(readdirSync(join(dir, "sessions"))).toHaveLength(1);
    }
  });

  it("two stores resolving a key whose first transcript a crash left torn end on one indexed session", async () => {
    const dir = stateDir();
    const [a, b] = [new FileSessionStore(dir, logger), new FileSessionStore(dir, logger)];
    writeFileSync(join(dir, "transcripts", `${firstSessionId("agent:main:both")}.jsonl`), "");
    const [ra, rb] = await Promise.all([a.resolve("agent:main:both"), b.resolve("agent:main:both")]);
    expect(ra).toEqual(rb);
    expect(await new FileSessionStore(dir, logger).get("agent:main:both")).toEqual(ra);
  });

  it("a reset while a store waits for a first session's header wins: the waiter resolves to the reset's session", async () => {
    const dir = stateDir();
    const [waiter, resetter] = [new FileSessionStore(dir, logger), new FileSessionStore(dir, logger)];
    const path = join(dir, "transcripts", `${firstSessionId("agent:main:moved")}.jsonl`);
    writeFileSync(path, "");
    const waiting = waiter.resolve("agent:main:moved");
    await new Promise((r) => setTimeout(r, 50));
    const reset = await resetter.reset("agent:main:moved");
    // The first session's header is whole only now: too late, the key routes to the reset's session.
    const header = {
      type: "session",
      sessionId: firstSessionId("agent:main:moved"),
      sessionKey: "agent:main:moved",
      at: 1,
    };
    appendFileSync(path, `${JSON.stringify(header)}\n`);
    expect(await waiting).toEqual(reset);
  });

  it("a key too long for a readable header gets an indexed session that every store reads", async () => {
    const dir = stateDir();
    const key = `agent:main:telegram:${"x".repeat(5000)}`;
    const created = await new FileSessionStore(dir, logger).resolve(key);
    expect(created.sessionId).not.toBe(firstSessionId(key));
    expect(await new FileSessionStore(dir, logger).get(key)).toEqual(created);
    expect(await new FileSessionStore(dir, logger).resolve(key)).toEqual(created);
  });

  it("an append to a transcript moved aside fails with a clear error and does not make it again", async () => {
    const dir = stateDir();
    const store = new FileSessionStore(dir, logger);
    const { sessionId } = await store.resolve("agent:main:aside");
    const path = join(dir, "transcripts", `${sessionId}.jsonl`);
    renameSync(path, `${path}.aside`);
    const other = new FileSessionStore(dir, logger);
    await expect(other.append(sessionId, [user("late")])).rejects.toThrow(
      `The transcript ${path} of session`,
    );
    expect(readdirSync(join(dir, "transcripts"))).toEqual([`${sessionId}.jsonl.aside`]);
    expect(await other.get("agent:main:aside")).toBeUndefined();
  });

  it("two stores creating one key's first session at once both resolve to it (the loser of the create joins it)", async () => {
    for (let round = 0; round < 5; round++) {
      const dir = stateDir();
      const [a, b] = [new FileSessionStore(dir, logger), new FileSessionStore(dir, logger)];
      const [ra, rb] = await Promise.all([a.resolve("agent:main:race"), b.resolve("agent:main:race")]);
      expect(ra).toEqual(rb);
      expect(ra.sessionId).toBe(firstSessionId("agent:main:race"));
      expect(readdirSync(join(dir, "sessions"))).toEqual([]);
      expect(await new FileSessionStore(dir, logger).get("agent:main:race")).toEqual(ra);
    }
  });

  it("a first transcript created a moment ago whose header is not written yet is waited for, not replaced", async () => {
    const dir = stateDir();
    const mine = new FileSessionStore(dir, logger);
    const theirs = new FileSessionStore(join(dir, "elsewhere"), logger);
    const made = await theirs.resolve("agent:main:slow");
    const header = readFileSync(join(dir, "elsewhere", "transcripts", `${made.sessionId}.jsonl`), "utf8");
    // Another process has created the file and not yet written its header.
    const path = join(dir, "transcripts", `${made.sessionId}.jsonl`);
    writeFileSync(path, header.slice(0, 20));
    setTimeout(() => appendFileSync(path, header.slice(20)), 100);
    expect(await mine.resolve("agent:main:slow")).toEqual(made);
    expect(readdirSync(join(dir, "sessions"))).toEqual([]);
  });

  it("a whole first-session header this version cannot read is an error naming the file, not a new session", async () => {
    const key = "agent:main:unreadable";
    const sessionId = firstSessionId(key);
    const other = firstSessionId("agent:main:other");
    const whole = JSON.stringify({ type: "session", sessionId, sessionKey: key, at: 1 });
    for (const [content, why] of [
      [`${JSON.stringify({ ...JSON.parse(whole), origin: "v2" })}\n`, "not a session header"],
      [`${whole.replace("}", `,"pad":"${"x".repeat(5000)}"}`)}`, "over 4096 bytes"],
      [`${whole.replaceAll(sessionId, other).replace(key, "agent:main:other")}\n`, "naming another session"],
    ] as const) {
      const dir = stateDir();
      const path = join(dir, "transcripts", `${sessionId}.jsonl`);
      const store = new FileSessionStore(dir, logger);
      const kept = await store.resolve("agent:main:kept");
      writeFileSync(path, content);
      await expect(store.get(key)).rejects.toThrow(why);
      await expect(store.resolve(key)).rejects.toThrow(`${path} of ${key}'s first session`);
      expect(readdirSync(join(dir, "sessions"))).toEqual([]);
      // The operator's list still shows every other session.
      expect(await store.list()).toEqual([kept]);
    }
  });

  it("an index rewritten in place (the same inode, as a freed inode number given out again) is read again", async () => {
    const dir = stateDir();
    const store = new FileSessionStore(dir, logger);
    await store.resolve("agent:main:ctime");
    const reset = await store.reset("agent:main:ctime");
    expect(await store.get("agent:main:ctime")).toEqual(reset);
    const [index] = readdirSync(join(dir, "sessions"));
    await new Promise((r) => setTimeout(r, 20));
    writeFileSync(join(dir, "sessions", index!), JSON.stringify({ ...reset, sessionId: "rewritten" }));
    expect((await store.get("agent:main:ctime"))?.sessionId).toBe("rewritten");
  });

  it("a key's cached first session is not taken for an index that has the same inode number", async () => {
    const dir = stateDir();
    const store = new FileSessionStore(dir, logger);
    const first = await store.resolve("agent:main:inode");
    const moved = await new FileSessionStore(join(dir, "elsewhere"), logger).reset("agent:main:inode");
    // An index whose inode number is the transcript's (as a reused inode number would be).
    const index = join(dir, "sessions", `${first.sessionId.slice(2)}.json`);
    const transcript = join(dir, "transcripts", `${first.sessionId}.jsonl`);
    linkSync(transcript, index);
    unlinkSync(transcript);
    writeFileSync(index, JSON.stringify({ ...moved, sessionId: "indexed-one" }));
    expect((await store.get("agent:main:inode"))?.sessionId).toBe("indexed-one");
  });
});

describe("FileSessionStore.open (a run's first lines, with no copy of the session in memory)", () => {
  const writer = (runId: string) => ({ type: "writer", runId, writer: `${runId}#1`, at: 1 }) as const;
  const lines = (runId: string, text: string) => [
    writer(runId),
    { ...user(text), runId, writer: `${runId}#1` },
  ];

  it("creates a new key's first session with the lines after its header, as every other store reads it", async () => {
    const dir = stateDir();
    const mine = new FileSessionStore(dir, logger);
    const first = lines("r1", "hello é");
    const opened = await mine.open("agent:main:open", first);
    expect(opened.record.sessionId).toBe(firstSessionId("agent:main:open"));
    // The run's own lines as it gave them, after the header; nothing of them parsed back.
    expect(opened.entries.slice(1)).toEqual(first);
    expect(opened.entries[1]).toBe(first[0]);
    const path = join(dir, "transcripts", `${opened.record.sessionId}.jsonl`);
    const onDisk = readFileSync(path, "utf8").trimEnd().split("\n");
    expect(onDisk.map((l) => JSON.parse(l).type)).toEqual(["session", "writer", "user"]);
    const other = new FileSessionStore(dir, logger);
    expect(await other.get("agent:main:open")).toEqual(opened.record);
    // Strictly: the lines as given are what a parse of the file gives (no field set to undefined).
    expect(await other.read(opened.record.sessionId)).toStrictEqual(opened.entries);
    expect(await mine.read(opened.record.sessionId)).toStrictEqual(opened.entries);
  });

  it("a key too long for a readable header gets an indexed session that every store reads", async () => {
    const dir = stateDir();
    const key = `agent:main:${"x".repeat(5000)}`;
    const opened = await new FileSessionStore(dir, logger).open(key, lines("r1", "long"));
    expect(opened.record.sessionId).not.toBe(firstSessionId(key));
    const other = new FileSessionStore(dir, logger);
    expect(await other.get(key)).toEqual(opened.record);
    expect((await other.read(opened.record.sessionId)).map((e) => e.type)).toEqual([
      "session",
      "writer",
      "user",
    ]);
  });

  it("a key whose first transcript a crash left torn (no index): the run's lines go to a new indexed session, the torn file left alone", async () => {
    const dir = stateDir();
    const key = "agent:main:torn-open";
    const path = join(dir, "transcripts", `${firstSessionId(key)}.jsonl`);
    const store = new FileSessionStore(dir, logger);
    writeFileSync(path, '{"type":"session","sessionId":"k-');
    const opened = await store.open(key, lines("r1", "after the crash"));
    expect(opened.record.sessionId).not.toBe(firstSessionId(key));
    expect(opened.entries.map((e) => e.type)).toEqual(["session", "writer", "user"]);
    expect(readFileSync(path, "utf8")).toBe('{"type":"session","sessionId":"k-');
    expect(await new FileSessionStore(dir, logger).get(key)).toEqual(opened.record);
  });

  it("a key whose index a crash left empty (and no first transcript) keeps one indexed session", async () => {
    const dir = stateDir();
    const key = "agent:main:emptied";
    const store = new FileSessionStore(dir, logger);
    const reset = await store.reset(key);
    await store.reset(key); // an index now names the key's session
    const index = readdirSync(join(dir, "sessions"))[0] ?? "";
    writeFileSync(join(dir, "sessions", index), "");
    rmSync(join(dir, "transcripts", `${reset.sessionId}.jsonl`), { force: true });
    const one = await new FileSessionStore(dir, logger).open(key, lines("r1", "one"));
    const two = await new FileSessionStore(dir, logger).open(key, lines("r2", "two"));
    expect(one.record.sessionId).not.toBe(firstSessionId(key));
    expect(two.record).toEqual(one.record);
    expect(two.entries.flatMap((e) => (e.type === "user" ? [e.text] : []))).toEqual(["one", "two"]);
  });
});
