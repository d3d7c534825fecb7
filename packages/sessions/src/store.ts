import { createHash, randomUUID } from "node:crypto";
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { open, readdir, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { type HubLogger, writeAllSync } from "@hub/core";
import { z } from "zod";
import { AppendFiles, type FileId, openInPool } from "./append-files.js";
import { dropStaleWrites, safeJson, type TranscriptEntry, TranscriptEntrySchema } from "./transcript.js";

/** The index record of a session as stored (validated whenever it is read back). */
export const SessionRecordSchema = z
  .object({ sessionKey: z.string(), sessionId: z.string(), createdAt: z.number(), updatedAt: z.number() })
  .strict();
/** The index record of a session: which transcript (sessionId) a sessionKey currently routes to. */
export type SessionRecord = z.infer<typeof SessionRecordSchema>;

/**
 * Where sessions live: the index (sessionKey -> sessionId) and the append-only
 * transcripts. Files on the state directory by default (`FileSessionStore`),
 * or Redis (`RedisSessionStore`) when processes on different machines share
 * nothing but Redis. A transcript has one writer at a time (its session lane);
 * a superseded writer's late lines are dropped by every reader (`dropStaleWrites`).
 */
export interface SessionStore {
  /** The session a key routes to now, or undefined if it never had one. */
  get(sessionKey: string): Promise<SessionRecord | undefined>;
  /** Every session's index record, most recently updated first (for the operator). */
  list(): Promise<SessionRecord[]>;
  /** The session a key routes to, created (with its transcript header) on first use. */
  resolve(sessionKey: string): Promise<SessionRecord>;
  /**
   * Starts a new sessionId (a new transcript) for the key, with `first` after its header in the write that
   * creates it (before the key routes to it).
   */
  reset(sessionKey: string, first?: TranscriptEntry[]): Promise<SessionRecord>;
  /** Appends entries to a transcript in one write, so a crash leaves whole entries. */
  append(sessionId: string, entries: TranscriptEntry[]): Promise<void>;
  /** Reads a transcript, a superseded writer's late lines dropped. */
  read(sessionId: string): Promise<TranscriptEntry[]>;
  /**
   * The session a key routes to (created on first use, as `resolve` does) with `first` appended in one
   * write, and its transcript as `read` returns it after that write: what a run with no copy of the
   * session in memory starts from. `openByParts` is the plain way; a store may do it in fewer steps.
   */
  open(sessionKey: string, first: TranscriptEntry[]): Promise<OpenedSession>;
}

/** A session as a run opens it (`SessionStore.open`): its record, and its transcript as a reader sees it. */
export interface OpenedSession {
  record: SessionRecord;
  entries: TranscriptEntry[];
}

/** `SessionStore.open` as resolve, append, read: for a store with no shorter way. */
export async function openByParts(
  store: Pick<SessionStore, "resolve" | "append" | "read">,
  sessionKey: string,
  first: TranscriptEntry[],
): Promise<OpenedSession> {
  const record = await store.resolve(sessionKey);
  await store.append(record.sessionId, first);
  return { record, entries: await store.read(record.sessionId) };
}

/** Checks a sessionId before it becomes part of a file name or key. */
export function checkedSessionId(sessionId: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(sessionId)) throw new Error(`invalid sessionId ${JSON.stringify(sessionId)}`);
  return sessionId;
}

/**
 * A new session's index record, its transcript header, and the header as its line (JSON, no newline) as
 * both stores write it (a new random sessionId unless given).
 */
export function newSession(
  sessionKey: string,
  sessionId: string = randomUUID(),
): { record: SessionRecord; header: TranscriptEntry; headerLine: string } {
  const now = Date.now();
  const record: SessionRecord = { sessionKey, sessionId, createdAt: now, updatedAt: now };
  const header = sessionHeader(record);
  return { record, header, headerLine: JSON.stringify(header) };
}

// The first line of a session's transcript (what `reset` writes for `record`).
function sessionHeader(record: SessionRecord): TranscriptEntry {
  return {
    type: "session",
    sessionId: record.sessionId,
    sessionKey: record.sessionKey,
    at: record.createdAt,
  };
}

/**
 * One JSONL line per entry (what both stores write). What a model or a tool produced (an assistant
 * line, a tool result) is validated first: a stray field or a wrong type would make every (strict)
 * reader skip the line. The other lines are built field by field by the hub from validated input, so
 * their type is their shape, and checking it again on every write would be work for nothing.
 */
export function transcriptLines(entries: TranscriptEntry[]): string[] {
  return entries.map((e) => JSON.stringify(producedOutside(e) ? TranscriptEntrySchema.parse(e) : e));
}

// A new transcript's text: its header line, then `first`'s lines, each ended by a newline.
function newTranscriptText(headerLine: string, first: TranscriptEntry[]): string {
  return first.length === 0 ? `${headerLine}\n` : `${headerLine}\n${transcriptLines(first).join("\n")}\n`;
}

const producedOutside = (e: TranscriptEntry) => e.type === "assistant" || e.type === "tool_result";

/**
 * Sessions on disk under the state directory: one JSONL transcript per
 * sessionId, and one small index file per sessionKey once the key was reset
 * (so sessions never contend on one shared file). A key's first session needs
 * no index: its sessionId is derived from the key (`k-<hash>`), so creating it
 * creates one file, not two (on a busy disk, creating files was most of a new
 * chat's cost). An index, once there, says where the key routes. Writes to one
 * session happen inside its session lane, so a transcript has one writer at a time.
 *
 * What a run reads is cached in memory and checked with one `stat`: an index
 * file is replaced by rename (a new inode) on every write, and a transcript
 * only grows, so a cached transcript reads just the bytes appended since
 * (by any process) instead of the whole file.
 */
export class FileSessionStore implements SessionStore {
  readonly #indexDir: string;
  readonly #transcriptDir: string;
  readonly #files = new AppendFiles();
  readonly #indexes = new Map<string, RoutedBy>();
  readonly #transcripts = new Map<string, { bytes: number; entries: TranscriptEntry[] }>();

  constructor(
    stateDir: string,
    private readonly logger: HubLogger,
  ) {
    this.#indexDir = join(stateDir, "sessions");
    this.#transcriptDir = join(stateDir, "transcripts");
    mkdirSync(this.#indexDir, { recursive: true, mode: 0o700 });
    mkdirSync(this.#transcriptDir, { recursive: true, mode: 0o700 });
  }

  #indexPath(sessionKey: string): string {
    return join(this.#indexDir, `${keyHash(sessionKey)}.json`);
  }

  // Whether the key has an index file (it was reset; one a crash left empty or cut short included).
  #hasIndex(sessionKey: string): boolean {
    return statSync(this.#indexPath(sessionKey), { throwIfNoEntry: false }) !== undefined;
  }

  #transcriptPath(sessionId: string): string {
    return join(this.#transcriptDir, `${checkedSessionId(sessionId)}.jsonl`);
  }

  /**
   * The session a key routes to now, or undefined if it never had one (or its index is one a crash left
   * empty or cut short).
   */
  async get(sessionKey: string): Promise<SessionRecord | undefined> {
    const path = this.#indexPath(sessionKey);
    // A stat of a small local directory's entry is microseconds: synchronous, and no exception when
    // missing (every new session starts here), instead of a thread-pool round trip.
    const found = statSync(path, { throwIfNoEntry: false });
    if (!found) return this.#firstSession(sessionKey);
    const cached = this.#indexes.get(sessionKey);
    if (cached && sameRoutingFile(cached, "index", found)) return cached.record;
    // An index is one short line: read at once, as its stat was.
    const text = readFileSync(path, "utf8");
    // Only a crash while a new session's index was being created leaves it empty: that session has
    // nothing but its header yet, so it starts again.
    if (text === "") return undefined;
    const record = this.#parseIndex(sessionKey, path, text);
    if (record)
      remember(this.#indexes, sessionKey, {
        kind: "index",
        dev: found.dev,
        ino: found.ino,
        ctimeMs: found.ctimeMs,
        record,
      });
    return record;
  }

  /**
   * The key's first session (a key never reset has no index): its record from its transcript's header, or
   * undefined when there is no such transcript, or only an empty one or a torn header (a crash while it
   * was created: it holds nothing else, as a run's lines follow its creation, so the key starts anew).
   * A whole header this version cannot read is an error, as for an index: starting over would hide the
   * session's history.
   */
  #firstSession(sessionKey: string): SessionRecord | undefined {
    const sessionId = firstSessionId(sessionKey);
    const path = this.#transcriptPath(sessionId);
    const found = statSync(path, { throwIfNoEntry: false });
    if (!found) return undefined;
    const cached = this.#indexes.get(sessionKey);
    if (cached && sameRoutingFile(cached, "first", found)) return cached.record;
    const header = firstSessionAt(path, sessionId);
    if ("torn" in header) return undefined;
    if ("unreadable" in header) {
      throw new Error(
        `The transcript ${path} of ${sessionKey}'s first session ${header.unreadable}, which this version cannot read; restore it, or move it aside to start the key anew.`,
      );
    }
    remember(this.#indexes, sessionKey, {
      kind: "first",
      dev: found.dev,
      ino: found.ino,
      record: header.record,
    });
    return header.record;
  }

  /**
   * An index record, or undefined when the file is cut short. Every index but a key's first is replaced
   * whole by a rename; the first is written in place, so a failed write (a full disk) can cut it short.
   * Its session then holds nothing but its header (the index is written before any run's lines), so the
   * key starts a new one, as from an empty index, instead of failing every message of the chat for good.
   * A whole record this version cannot read (a newer version's, an edit) is an error, not a torn write:
   * starting over would hide the session's history.
   */
  #parseIndex(sessionKey: string, path: string, text: string): SessionRecord | undefined {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.logger.warn(
        { sessionKey, path },
        "session index is cut short (a failed write?); the key starts a new session",
      );
      return undefined;
    }
    const record = SessionRecordSchema.safeParse(json);
    if (record.success) return record.data;
    throw new Error(
      `The session index ${path} (${sessionKey}) is not a record this version can read (${record.error.issues[0]?.message}); restore it, or remove it to send the key back to its first session (a new one if it has none).`,
    );
  }

  /** Every session's index record, most recently updated first (for the operator). */
  async list(): Promise<SessionRecord[]> {
    const names = (await readdir(this.#indexDir)).filter((n) => n.endsWith(".json"));
    const [indexed, firsts] = await Promise.all([this.#listIndexed(names), this.#listFirsts(names)]);
    return [...indexed, ...firsts].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  // The first sessions of keys never reset (no index names their key's hash).
  async #listFirsts(indexNames: string[]): Promise<SessionRecord[]> {
    const indexed = new Set(indexNames.map((n) => n.slice(0, -".json".length)));
    const names = (await readdir(this.#transcriptDir)).filter(
      (n) =>
        n.startsWith(FIRST_PREFIX) &&
        n.endsWith(".jsonl") &&
        !indexed.has(n.slice(FIRST_PREFIX.length, -".jsonl".length)),
    );
    // A header torn or unreadable does not hide every other session (get() reports an unreadable one).
    return names.flatMap((n) => {
      const header = firstSessionAt(join(this.#transcriptDir, n), n.slice(0, -".jsonl".length));
      return "record" in header ? [header.record] : [];
    });
  }

  async #listIndexed(names: string[]): Promise<SessionRecord[]> {
    const records = await Promise.all(
      names.map(async (n) => {
        const text = await readFile(join(this.#indexDir, n), "utf8");
        // Empty: a crash while a new session's index was created (or one being created right now).
        if (text === "") return undefined;
        try {
          return SessionRecordSchema.safeParse(JSON.parse(text));
        } catch {
          // A torn write of another kind: one unreadable index does not hide every other session.
          return undefined;
        }
      }),
    );
    return records.flatMap((r) => (r?.success ? [r.data] : []));
  }

  /** The session a key routes to, created (with its transcript header) on first use. */
  async resolve(sessionKey: string): Promise<SessionRecord> {
    const known = await this.get(sessionKey);
    // None: the key's first session, or the one someone else created since get() looked (either kind).
    return known ?? (await this.#startFirst(sessionKey, "join")) ?? this.#startIndexed(sessionKey, "join");
  }

  /**
   * As `resolve`, append and read, with a key's new first session created with `first` in its creating
   * write and nothing read back: the file held nothing before that write (O_EXCL), and anything another
   * writer appends comes after it, as after a read-back. (A key's first message made a create, a write,
   * a stat, an open, a read and a close, and parsed its own lines back.)
   */
  async open(sessionKey: string, first: TranscriptEntry[]): Promise<OpenedSession> {
    // No index: the key's first session, created here unless it exists. The create is tried before looking
    // for the transcript: a key with no copy in memory is most often a new one, and a stat in the
    // transcripts directory waits (on the event loop) behind the creates under way there, where a failed
    // exclusive create waits in the thread pool. (An index a crash left empty or cut short routes nowhere,
    // but its key was reset: its next session is an indexed one, which `resolve` starts.)
    if (!this.#hasIndex(sessionKey)) {
      const created = await this.#createFirst(sessionKey, first);
      if (created) return created;
    }
    const record = await this.resolve(sessionKey);
    await this.append(record.sessionId, first);
    return { record, entries: await this.read(record.sessionId) };
  }

  // A key's first session with `first` after its header, in one exclusive create; undefined when its header
  // would be too long to read back or the file exists (another store creating it: `resolve` joins it).
  async #createFirst(sessionKey: string, first: TranscriptEntry[]): Promise<OpenedSession | undefined> {
    const { record, header, headerLine } = newSession(sessionKey, firstSessionId(sessionKey));
    if (Buffer.byteLength(headerLine) + 1 > HEADER_BYTES) return undefined;
    const text = newTranscriptText(headerLine, first);
    const file = await this.#files.create(this.#transcriptPath(record.sessionId), text);
    if (!file) return undefined;
    const entries = [header, ...first];
    this.#started(record, entries, text, { kind: "first", ...file });
    return { record, entries: dropStaleWrites(entries) };
  }

  /** Starts a new sessionId (a new transcript) for the key: its first session, or one its index names. */
  async reset(sessionKey: string, first: TranscriptEntry[] = []): Promise<SessionRecord> {
    return (
      (await this.#startFirst(sessionKey, "skip", first)) ?? this.#startIndexed(sessionKey, "replace", first)
    );
  }

  /**
   * The key's first session, created as its one file unless the key has an index (it was reset), its
   * header would be too long to read back (a very long key), or the file exists: a first session being
   * replaced ("skip"), or, for `resolve` ("join"), one another store or process may be creating right now.
   */
  async #startFirst(
    sessionKey: string,
    ifExists: "join" | "skip",
    first: TranscriptEntry[] = [],
  ): Promise<SessionRecord | undefined> {
    if (this.#hasIndex(sessionKey)) return undefined;
    const created = await this.#createFirst(sessionKey, first);
    if (created) return created.record;
    // Not created: the file exists, or the header is too long (then there is no file, and the join finds none).
    const path = this.#transcriptPath(firstSessionId(sessionKey));
    return ifExists === "join" ? this.#joinFirstBeingCreated(sessionKey, path) : undefined;
  }

  /**
   * The session another store (or process) gave the key while this one found none: its first session
   * once the header is there (its creator writes it right after the file appears), or an index written
   * meanwhile (a reset), which `get` reads first. Undefined when the header is still not whole after
   * HEADER_WAIT_MS: a crash's leftover, and the key moves on to an indexed session.
   */
  async #joinFirstBeingCreated(sessionKey: string, path: string): Promise<SessionRecord | undefined> {
    const deadline = performance.now() + HEADER_WAIT_MS;
    for (;;) {
      const record = await this.get(sessionKey);
      if (record) return record;
      if (!statSync(path, { throwIfNoEntry: false })) return undefined;
      if (performance.now() > deadline) {
        this.logger.warn(
          { sessionKey, path },
          "a first session's transcript has no whole header (a crash while it was created?); the key starts a new session",
        );
        return undefined;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /**
   * A session with a new random id, and the key's index pointing at it. For `resolve` ("join"), an index
   * another store wrote meanwhile wins (this one's transcript, a header alone, is left unused); for
   * `reset` ("replace"), this one replaces it.
   */
  async #startIndexed(
    sessionKey: string,
    ifIndexed: "join" | "replace",
    first: TranscriptEntry[] = [],
  ): Promise<SessionRecord> {
    const { record, header, headerLine } = newSession(sessionKey);
    const text = newTranscriptText(headerLine, first);
    if (!(await this.#files.create(this.#transcriptPath(record.sessionId), text)))
      throw new Error(`a new session's transcript ${record.sessionId} exists already`);
    const index = await this.#writeIndex(record, ifIndexed);
    if ("record" in index) return index.record;
    return this.#started(record, [header, ...first], text, { kind: "index", ...index });
  }

  // What was just written (`text`, the lines of `entries`) is what the next read would find: a new session
  // reads nothing back. `routedBy` is the file `get` checks for the key (its index, or a first session's
  // transcript).
  #started(
    record: SessionRecord,
    entries: TranscriptEntry[],
    text: string,
    routedBy: Omit<RoutedBy, "record">,
  ): SessionRecord {
    // Assigned, not spread: `{ ...routedBy, record }` gave every cached entry a hidden class of its own (as
    // the agent's transcript lines had, see its `writtenBy`).
    remember(this.#indexes, record.sessionKey, Object.assign({}, routedBy, { record }));
    remember(this.#transcripts, record.sessionId, { bytes: Buffer.byteLength(text), entries });
    return record;
  }

  /**
   * Points the key at `record`, unless ("join") the key has a readable index by now: then that index's
   * record. A key's first index is created in place: no temporary file and no rename, which on a busy
   * disk are most of a new session's cost (directory updates serialize per directory). A crash in
   * between leaves an empty file, which `get` reads as no session. Any other index is replaced whole,
   * through a rename.
   */
  async #writeIndex(
    record: SessionRecord,
    ifIndexed: "join" | "replace",
  ): Promise<WrittenFile | { record: SessionRecord }> {
    const path = this.#indexPath(record.sessionKey);
    const text = JSON.stringify(record);
    // The file's identity is taken from the file this call wrote, not from the path afterwards: a rename by
    // another writer in between must not pair its file with this record in the cache.
    try {
      return await writeWhole(path, text, "wx");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const current = ifIndexed === "join" ? await this.#indexBeingWritten(record.sessionKey) : undefined;
    if (current) return { record: current };
    const tmp = `${path}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`;
    const written = await writeWhole(tmp, text, "w");
    await rename(tmp, path);
    return written;
  }

  // The key's index another store has just created: empty until its writer's write, which follows its open
  // at once; still empty after INDEX_WAIT_MS, it is a crash's leftover (undefined: it is replaced).
  async #indexBeingWritten(sessionKey: string): Promise<SessionRecord | undefined> {
    const deadline = performance.now() + INDEX_WAIT_MS;
    for (;;) {
      const record = await this.get(sessionKey);
      if (record || performance.now() > deadline) return record;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Appends entries to a transcript in one write, so a crash leaves whole lines. */
  async append(sessionId: string, entries: TranscriptEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const lines = transcriptLines(entries).join("\n");
    const path = this.#transcriptPath(sessionId);
    try {
      await this.#files.append(path, `${lines}\n`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      // Not created again here: a transcript without its header would make the key unreadable.
      throw new Error(
        `The transcript ${path} of session ${sessionId} is gone (moved or deleted while the session was in use); nothing was written. Restore it, or start a new session with /new.`,
      );
    }
  }

  /** Reads a transcript; an unreadable line (a torn write) is skipped and logged, a superseded writer's late lines dropped. */
  async read(sessionId: string): Promise<TranscriptEntry[]> {
    const path = this.#transcriptPath(sessionId);
    const found = statSync(path, { throwIfNoEntry: false });
    if (!found) return [];
    const size = found.size;
    let cached = this.#transcripts.get(sessionId);
    if (!cached || cached.bytes > size) cached = { bytes: 0, entries: [] };
    if (size > cached.bytes) {
      const tail = await readFrom(path, cached.bytes, size);
      // Only whole lines: a line still being written is read next time.
      const end = tail.lastIndexOf(0x0a) + 1;
      const text = tail.subarray(0, end).toString("utf8");
      cached = { bytes: cached.bytes + end, entries: [...cached.entries, ...this.#parse(sessionId, text)] };
      remember(this.#transcripts, sessionId, cached);
    }
    return dropStaleWrites(cached.entries);
  }

  #parse(sessionId: string, text: string): TranscriptEntry[] {
    const entries: TranscriptEntry[] = [];
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      try {
        entries.push(TranscriptEntrySchema.parse(JSON.parse(line)));
      } catch {
        this.logger.warn({ sessionId }, "skipping unreadable transcript line");
      }
    }
    return entries;
  }
}

const CACHED_SESSIONS = 1000;

/** A file this store wrote: which one (device, inode) and when it last changed (ctime). */
interface WrittenFile extends FileId {
  ctimeMs: number;
}

/**
 * Which file routed a key when its record was cached: its index, or (a key never reset) its first
 * session's transcript. The kind and the device are kept with the inode, so an inode number reused by
 * the other kind of file (or on another mount) is not taken for the cached one; an index's change time
 * too, as an index replaced later may get a freed inode number back. (A transcript only grows, and
 * every append changes its ctime: a first session is known by device and inode.)
 */
interface RoutedBy extends FileId {
  kind: "index" | "first";
  ctimeMs?: number;
  record: SessionRecord;
}

const sameRoutingFile = (cached: RoutedBy, kind: RoutedBy["kind"], found: WrittenFile) =>
  cached.kind === kind &&
  cached.ino === found.ino &&
  cached.dev === found.dev &&
  (kind === "first" || cached.ctimeMs === found.ctimeMs);

/** How long an empty index another store has just created is given to be written. */
const INDEX_WAIT_MS = 200;

/** How long a first session's header is waited for when another process has just created its file. */
const HEADER_WAIT_MS = 2000;

/** The prefix of a first session's id (see `FileSessionStore`): random ids (UUIDs) never start so. */
const FIRST_PREFIX = "k-";

// The file name of a key's index, and the rest of its first session's id.
const keyHash = (sessionKey: string) => createHash("sha256").update(sessionKey).digest("hex").slice(0, 40);

/** The sessionId of a key's first session in a `FileSessionStore`. */
export const firstSessionId = (sessionKey: string) => `${FIRST_PREFIX}${keyHash(sessionKey)}`;

/**
 * What a first session's transcript starts with: its record; torn (no whole line: empty, or a header a
 * crash cut short); or a header this version cannot read, with a sentence saying why.
 */
type FirstHeader = { record: SessionRecord } | { torn: true } | { unreadable: string };

// The first session whose transcript is at `path` (its id `sessionId`), from its header.
function firstSessionAt(path: string, sessionId: string): FirstHeader {
  const line = firstLine(path);
  if (line === undefined) return { torn: true };
  if (line === TOO_LONG) return { unreadable: `has a header over ${HEADER_BYTES} bytes` };
  const parsed = TranscriptEntrySchema.safeParse(safeJson(line));
  if (!parsed.success || parsed.data.type !== "session") {
    return { unreadable: "starts with a line that is not a session header" };
  }
  const { sessionKey, at } = parsed.data;
  if (parsed.data.sessionId !== sessionId || firstSessionId(sessionKey) !== sessionId) {
    return { unreadable: `has a header naming another session (${parsed.data.sessionId} of ${sessionKey})` };
  }
  return { record: { sessionKey, sessionId, createdAt: at, updatedAt: at } };
}

/** A header line is short: it is read whole within this many bytes. */
const HEADER_BYTES = 4096;
const TOO_LONG = Symbol("no line ends within HEADER_BYTES");

// The file's first whole line; undefined when it has none (empty, or a line cut short).
function firstLine(path: string): string | typeof TOO_LONG | undefined {
  const buffer = Buffer.alloc(HEADER_BYTES);
  const fd = openSync(path, "r");
  let read: number;
  try {
    read = readSync(fd, buffer, 0, HEADER_BYTES, 0);
  } finally {
    closeSync(fd);
  }
  const end = buffer.subarray(0, read).indexOf(0x0a);
  if (end >= 0) return buffer.subarray(0, end).toString("utf8");
  return read < HEADER_BYTES ? undefined : TOO_LONG;
}

/** A small LRU: the most recently used entries stay. */
export function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > CACHED_SESSIONS) map.delete(map.keys().next().value as string);
}

/**
 * Writes a small file in one go (mode 0600) and returns its inode. Creating the file is done in the
 * thread pool: it waits on the file system's journal while other files are written, which blocked the
 * event loop for a millisecond at times (8% of its time under load). Writing a few bytes to the open
 * file is a syscall into the page cache, done at once.
 */
async function writeWhole(path: string, text: string, flag: "w" | "wx"): Promise<WrittenFile> {
  const fd = await openInPool(path, flag);
  try {
    const bytes = Buffer.from(text, "utf8");
    writeAllSync(fd, bytes);
    const { dev, ino, ctimeMs } = fstatSync(fd);
    return { dev, ino, ctimeMs };
  } finally {
    closeSync(fd);
  }
}

/** Up to this many bytes are read at once (from the page cache, microseconds); more in the thread pool. */
const SYNC_READ_BYTES = 64 * 1024;

async function readFrom(path: string, from: number, to: number): Promise<Buffer> {
  const buffer = Buffer.alloc(to - from);
  if (buffer.length <= SYNC_READ_BYTES) {
    const fd = openSync(path, "r");
    try {
      return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, from));
    } finally {
      closeSync(fd);
    }
  }
  const handle = await open(path, "r");
  try {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, from);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
