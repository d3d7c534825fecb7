import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@hub/core";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import { RedisSessionStore } from "../src/redis-store.js";
import { FileSessionStore, type SessionStore } from "../src/store.js";
import type { TranscriptEntry } from "../src/transcript.js";

// SessionStore.open, the same cases against both stores: two stores on one state (two processes).
const logger = createLogger({ level: "silent" });
const prefix = testPrefix("store-open");
const redis = new Redis(REDIS_URL);
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  await dropPrefix(prefix);
  redis.disconnect();
});

let keys = 0;
const stores: Array<[string, () => [SessionStore, SessionStore]]> = [
  [
    "files",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "store-open-"));
      dirs.push(dir);
      return [new FileSessionStore(dir, logger), new FileSessionStore(dir, logger)];
    },
  ],
  [
    "redis",
    () => {
      const own = `${prefix}:${keys++}`;
      return [new RedisSessionStore(redis, own, logger), new RedisSessionStore(redis, own, logger)];
    },
  ],
];

const lines = (runId: string, text: string): TranscriptEntry[] => [
  { type: "writer", runId, writer: `${runId}#1`, at: 1 },
  { type: "user", runId, text, at: 1, writer: `${runId}#1` },
];
const texts = (entries: TranscriptEntry[]) => entries.flatMap((e) => (e.type === "user" ? [e.text] : []));

describe.each(stores)("SessionStore.open (%s)", (_name, pair) => {
  it("a new key: its session with the lines after the header, the same as another store reads", async () => {
    const [mine, other] = pair();
    const first = lines("r1", "hello é");
    const opened = await mine.open("agent:main:new", first);
    expect(opened.entries.map((e) => e.type)).toEqual(["session", "writer", "user"]);
    expect(opened.entries.slice(1)).toEqual(first);
    expect(opened.entries[0]).toMatchObject({ type: "session", sessionId: opened.record.sessionId });
    expect(await other.get("agent:main:new")).toEqual(opened.record);
    expect(await other.read(opened.record.sessionId)).toEqual(opened.entries);
    // Read again by its opener: the same, nothing twice.
    expect(await mine.read(opened.record.sessionId)).toEqual(opened.entries);
  });

  it("a key with a session (first or reset): the lines appended, and all of it, other stores' lines included", async () => {
    const [a, b] = pair();
    const one = await a.open("agent:main:more", lines("r1", "one"));
    const two = await b.open("agent:main:more", lines("r2", "two"));
    expect(two.record).toEqual(one.record);
    expect(texts(two.entries)).toEqual(["one", "two"]);
    // The first store's cached copy is read on from where it was.
    const three = await a.open("agent:main:more", lines("r3", "three"));
    expect(texts(three.entries)).toEqual(["one", "two", "three"]);
    expect(three.entries.filter((e) => e.type === "session")).toHaveLength(1);
    const reset = await a.reset("agent:main:more");
    const four = await b.open("agent:main:more", lines("r4", "four"));
    expect(four.record).toEqual(reset);
    expect(four.entries.map((e) => e.type)).toEqual(["session", "writer", "user"]);
    expect(texts(four.entries)).toEqual(["four"]);
  });

  it("a reset writes the lines it is given after the new transcript's header (a new key, and one with a session)", async () => {
    const [a, b] = pair();
    const floor: TranscriptEntry[] = [{ type: "writer", runId: "/new", writer: "/new#1796585299897", at: 1 }];
    for (const key of ["agent:main:fresh", "agent:main:used"]) {
      if (key.endsWith("used")) await a.open(key, lines("r0", "zero"));
      const reset = await a.reset(key, floor);
      for (const store of [a, b]) {
        expect(await store.get(key)).toEqual(reset);
        expect((await store.read(reset.sessionId)).map((e) => e.type)).toEqual(["session", "writer"]);
      }
    }
  });

  it("two stores opening one new key at once end in one session holding both runs' lines once", async () => {
    for (let round = 0; round < 5; round++) {
      const [a, b] = pair();
      const key = `agent:main:race${round}`;
      const [oa, ob] = await Promise.all([
        a.open(key, lines("ra", "from a")),
        b.open(key, lines("rb", "from b")),
      ]);
      expect(oa.record).toEqual(ob.record);
      const seen = await a.read(oa.record.sessionId);
      expect(await b.read(oa.record.sessionId)).toEqual(seen);
      expect(seen.filter((e) => e.type === "session")).toHaveLength(1);
      expect(texts(seen).sort()).toEqual(["from a", "from b"]);
      // The store that lost the create read the winner's lines with its own; the winner has its own.
      const [loser, winner] = oa.entries.length > ob.entries.length ? [oa, ob] : [ob, oa];
      expect(texts(loser.entries).sort()).toEqual(["from a", "from b"]);
      expect(winner.entries).toHaveLength(3);
    }
  });
});
