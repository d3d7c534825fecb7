import { createHash, randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { appendFile, readdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { HubLogger } from "@hub/core";
import { z } from "zod";
import { dropStaleWrites, type TranscriptEntry, TranscriptEntrySchema } from "./transcript.js";

const SessionRecordSchema = z
  .object({ sessionKey: z.string(), sessionId: z.string(), createdAt: z.number(), updatedAt: z.number() })
  .strict();
/** The index record of a session: which transcript (sessionId) a sessionKey currently routes to. */
export type SessionRecord = z.infer<typeof SessionRecordSchema>;

/**
 * Sessions on disk under the state directory: one small index file per
 * sessionKey (so sessions never contend on one shared file) and one JSONL
 * transcript per sessionId. Writes to one session happen inside its session
 * lane, so a transcript has one writer at a time.
 */
export class SessionStore {
  readonly #indexDir: string;
  readonly #transcriptDir: string;

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
    return join(this.#indexDir, `${createHash("sha256").update(sessionKey).digest("hex").slice(0, 40)}.json`);
  }

  #transcriptPath(sessionId: string): string {
    if (!/^[A-Za-z0-9_-]+$/.test(sessionId))
      throw new Error(`invalid sessionId ${JSON.stringify(sessionId)}`);
    return join(this.#transcriptDir, `${sessionId}.jsonl`);
  }

  /** The session a key routes to now, or undefined if it never had one. */
  async get(sessionKey: string): Promise<SessionRecord | undefined> {
    try {
      return SessionRecordSchema.parse(JSON.parse(await readFile(this.#indexPath(sessionKey), "utf8")));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  /** Every session's index record, most recently updated first (for the operator). */
  async list(): Promise<SessionRecord[]> {
    const names = (await readdir(this.#indexDir)).filter((n) => n.endsWith(".json"));
    const records = await Promise.all(
      names.map(async (n) =>
        SessionRecordSchema.safeParse(JSON.parse(await readFile(join(this.#indexDir, n), "utf8"))),
      ),
    );
    return records.flatMap((r) => (r.success ? [r.data] : [])).sort((a, b) => b.updatedAt - a.updatedAt);
  }

  /** The session a key routes to, created (with its transcript header) on first use. */
  async resolve(sessionKey: string): Promise<SessionRecord> {
    return (await this.get(sessionKey)) ?? this.reset(sessionKey);
  }

  /** Starts a new sessionId (a new transcript) for the key. */
  async reset(sessionKey: string): Promise<SessionRecord> {
    const now = Date.now();
    const record: SessionRecord = { sessionKey, sessionId: randomUUID(), createdAt: now, updatedAt: now };
    await this.append(record.sessionId, [
      { type: "session", sessionId: record.sessionId, sessionKey, at: now },
    ]);
    await this.#writeIndex(record);
    return record;
  }

  async #writeIndex(record: SessionRecord): Promise<void> {
    const path = this.#indexPath(record.sessionKey);
    const tmp = `${path}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`;
    await writeFile(tmp, JSON.stringify(record), { mode: 0o600 });
    await rename(tmp, path);
  }

  /** Appends entries to a transcript in one write, so a crash leaves whole lines. */
  async append(sessionId: string, entries: TranscriptEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const lines = entries.map((e) => `${JSON.stringify(TranscriptEntrySchema.parse(e))}\n`).join("");
    await appendFile(this.#transcriptPath(sessionId), lines, { mode: 0o600 });
  }

  /** Reads a transcript; an unreadable line (a torn write) is skipped and logged, a superseded writer's late lines dropped. */
  async read(sessionId: string): Promise<TranscriptEntry[]> {
    let text: string;
    try {
      text = await readFile(this.#transcriptPath(sessionId), "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const entries: TranscriptEntry[] = [];
    for (const [i, line] of text.split("\n").entries()) {
      if (!line.trim()) continue;
      try {
        entries.push(TranscriptEntrySchema.parse(JSON.parse(line)));
      } catch {
        this.logger.warn({ sessionId, line: i + 1 }, "skipping unreadable transcript line");
      }
    }
    return dropStaleWrites(entries);
  }
}
