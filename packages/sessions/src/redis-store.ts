import type { HubLogger } from "@hub/core";
import { loadScript, type ReadyCount, readyCount, runScript } from "@hub/queue";
import type { Redis } from "ioredis";
import {
  checkedSessionId,
  newSession,
  type OpenedSession,
  remember,
  type SessionRecord,
  SessionRecordSchema,
  type SessionStore,
  transcriptLines,
} from "./store.js";
import { dropStaleWrites, type TranscriptEntry, TranscriptEntrySchema } from "./transcript.js";

/** A transcript as last read: how many lines of its list, and those lines as entries. */
interface CachedTranscript {
  lines: number;
  entries: TranscriptEntry[];
}

const CREATE_SESSION = loadScript(new URL("./scripts/create-session.lua", import.meta.url));

/**
 * Sessions in Redis, for processes that share nothing but Redis (no shared
 * disk): the index record of a sessionKey is one JSON string
 * (`<prefix>:session:<sessionKey>`), the index of every session a sorted set
 * by last update (`<prefix>:sessions`), and a transcript one list of JSONL
 * lines (`<prefix>:transcript:<sessionId>`). An append is one RPUSH, so a
 * crash leaves whole entries; a reset writes header, index and sorted set in
 * one MULTI. Like the files, nothing expires: transcripts are kept.
 *
 * A transcript only grows, so a cached copy reads just the lines appended
 * since (by any process): one LRANGE from the cached length. Except when Redis
 * comes back with less (restored from a backup, or without the last second of
 * its AOF): the cache is dropped each time the connection is ready again after a
 * reconnect, as the lines after the cached length would be others' or none.
 */
export class RedisSessionStore implements SessionStore {
  readonly #cache = new Map<string, CachedTranscript>();
  readonly #ready: ReadyCount;
  // The connection's ready count the cache was filled under.
  #cachedUnder: number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly logger: HubLogger,
  ) {
    this.#ready = readyCount(redis);
    this.#cachedUnder = this.#ready.count;
  }

  // The cached transcripts, none after the connection was ready again since they were read.
  get #transcripts(): Map<string, CachedTranscript> {
    if (this.#ready.count !== this.#cachedUnder) {
      this.#cache.clear();
      this.#cachedUnder = this.#ready.count;
    }
    return this.#cache;
  }

  #indexKey(sessionKey: string): string {
    return `${this.prefix}:session:${sessionKey}`;
  }

  get #allKey(): string {
    return `${this.prefix}:sessions`;
  }

  #transcriptKey(sessionId: string): string {
    return `${this.prefix}:transcript:${checkedSessionId(sessionId)}`;
  }

  async get(sessionKey: string): Promise<SessionRecord | undefined> {
    const raw = await this.redis.get(this.#indexKey(sessionKey));
    return raw === null ? undefined : SessionRecordSchema.parse(JSON.parse(raw));
  }

  async list(): Promise<SessionRecord[]> {
    const keys = await this.redis.zrevrange(this.#allKey, 0, -1);
    const records: SessionRecord[] = [];
    for (let i = 0; i < keys.length; i += 500) {
      const raws = await this.redis.mget(keys.slice(i, i + 500).map((k) => this.#indexKey(k)));
      for (const raw of raws) {
        const parsed = raw === null ? undefined : SessionRecordSchema.safeParse(JSON.parse(raw));
        if (parsed?.success) records.push(parsed.data);
      }
    }
    return records;
  }

  async resolve(sessionKey: string): Promise<SessionRecord> {
    return (await this.get(sessionKey)) ?? (await this.#create(sessionKey, [])).record;
  }

  /**
   * As resolve, append and read, in two round trips instead of three or four: a new session is created
   * with `first` after its header in its creating step (and not read back: its list held nothing before),
   * and an existing one gets `first` and is read in one pipeline (the read sees the push).
   */
  async open(sessionKey: string, first: TranscriptEntry[]): Promise<OpenedSession> {
    const known = await this.get(sessionKey);
    const opened = known ? { record: known, created: undefined } : await this.#create(sessionKey, first);
    if (opened.created) return { record: opened.record, entries: dropStaleWrites(opened.created) };
    const { sessionId } = opened.record;
    const key = this.#transcriptKey(sessionId);
    const under = this.#ready.count;
    const cached = this.#transcripts.get(sessionId) ?? { lines: 0, entries: [] };
    const pipeline = this.redis.pipeline();
    if (first.length > 0) pipeline.rpush(key, ...transcriptLines(first));
    const results = await pipeline.lrange(key, cached.lines, -1).exec();
    for (const [error] of results ?? []) if (error) throw error;
    if (this.#readAcrossReconnect(under, cached))
      return { record: opened.record, entries: await this.read(sessionId) };
    const fresh = results?.at(-1)?.[1] as string[];
    return { record: opened.record, entries: this.#readOn(sessionId, cached, fresh) };
  }

  // A new session unless the key has one by now (another process resolving it at the same moment): then that
  // one, and `created` undefined. A new one's transcript holds `first` after its header (created: its lines).
  async #create(
    sessionKey: string,
    first: TranscriptEntry[],
  ): Promise<{ record: SessionRecord; created: TranscriptEntry[] | undefined }> {
    const { record, header, headerLine } = newSession(sessionKey);
    const existing = await runScript(
      this.redis,
      CREATE_SESSION,
      [this.#indexKey(sessionKey), this.#allKey, this.#transcriptKey(record.sessionId)],
      [JSON.stringify(record), headerLine, record.updatedAt, sessionKey, ...transcriptLines(first)],
    );
    if (typeof existing === "string")
      return { record: SessionRecordSchema.parse(JSON.parse(existing)), created: undefined };
    const created = [header, ...first];
    remember(this.#transcripts, record.sessionId, { lines: created.length, entries: created });
    return { record, created };
  }

  async reset(sessionKey: string, first: TranscriptEntry[] = []): Promise<SessionRecord> {
    const { record, headerLine } = newSession(sessionKey);
    await this.redis
      .multi()
      .rpush(this.#transcriptKey(record.sessionId), headerLine, ...transcriptLines(first))
      .set(this.#indexKey(sessionKey), JSON.stringify(record))
      .zadd(this.#allKey, record.updatedAt, sessionKey)
      .exec();
    return record;
  }

  async append(sessionId: string, entries: TranscriptEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.redis.rpush(this.#transcriptKey(sessionId), ...transcriptLines(entries));
  }

  async read(sessionId: string): Promise<TranscriptEntry[]> {
    const under = this.#ready.count;
    const cached = this.#transcripts.get(sessionId) ?? { lines: 0, entries: [] };
    const fresh = await this.redis.lrange(this.#transcriptKey(sessionId), cached.lines, -1);
    if (this.#readAcrossReconnect(under, cached)) return this.read(sessionId);
    return this.#readOn(sessionId, cached, fresh);
  }

  // Whether a read from the cached length was answered after the connection was ready again: the offset was
  // the Redis before's, and the read is made again from the start (the cache is gone by now).
  #readAcrossReconnect(under: number, cached: CachedTranscript): boolean {
    return this.#ready.count !== under && cached.lines > 0;
  }

  // The cached copy with the lines read after it (`fresh`), kept as the new cached copy; what a reader sees.
  #readOn(sessionId: string, cached: CachedTranscript, fresh: string[]): TranscriptEntry[] {
    if (fresh.length === 0 && cached.lines === 0) return [];
    const next = {
      lines: cached.lines + fresh.length,
      entries: [...cached.entries, ...this.#parse(sessionId, fresh)],
    };
    remember(this.#transcripts, sessionId, next);
    return dropStaleWrites(next.entries);
  }

  #parse(sessionId: string, lines: string[]): TranscriptEntry[] {
    const entries: TranscriptEntry[] = [];
    for (const line of lines) {
      try {
        entries.push(TranscriptEntrySchema.parse(JSON.parse(line)));
      } catch {
        this.logger.warn({ sessionId }, "skipping unreadable transcript line");
      }
    }
    return entries;
  }
}
