import { type ReadyCount, readyCount } from "@hub/queue";
import type { Redis } from "ioredis";
import type { ClaimSeen } from "./run-steps.js";
import type { SessionRecord, SessionStore } from "./store.js";
import { type TranscriptEntry, VisibleLines } from "./transcript.js";

/** A process's copy of a session, kept from its last run of it. */
interface Kept {
  record: SessionRecord;
  /**
   * The transcript as a reader sees it (a superseded writer's late lines dropped), kept up to date as the
   * run appends: its own lines, which a reader always sees, so no line it read or wrote is left out.
   */
  visible: VisibleLines;
  /** About how many characters the lines hold (see `weightOf`). */
  chars: number;
  /** The writer generation of the run that left it, and the writer's "touched" count that run saw. */
  generation: number;
  touched: string;
}

/** Bounds of the kept copies: sessions, and characters of transcript text in all. */
export interface HeldSessionLimits {
  sessions: number;
  chars: number;
}

/** About how many characters an entry holds: its texts, plus a little for its other fields. */
function weightOf(entry: TranscriptEntry): number {
  let chars = 100;
  if ("text" in entry) chars += entry.text.length;
  if (entry.type === "tool_result") chars += entry.content.length;
  if (entry.type === "compaction") chars += entry.summary.length;
  if (entry.type === "assistant") for (const c of entry.toolCalls ?? []) chars += c.arguments.length + 50;
  return chars;
}

const weightOfAll = (entries: TranscriptEntry[]) => entries.reduce((sum, e) => sum + weightOf(e), 0);

/**
 * The sessions this process's runs hold: the index record and the transcript
 * in memory while a run holds the session's writer claim, written through the
 * store (a kept-open file) and kept after the run for the session's next run
 * here, so a run reads nothing back from disk or Redis.
 *
 * A kept copy is used only when it is provably current, from what the claim
 * found in Redis (`ClaimSeen`): the generation the claim replaced is the kept
 * one (no other claim since, in any process), the previous claim was released
 * (the run that left the copy settled), and the writer's "touched" count is
 * the one that run saw (nothing was written outside a claim since: context-only
 * messages, resets, see `SessionWriters.touch`). A claim's generation is at least
 * the time of the claim (see `generationBase`), so a sequence that restarted after Redis lost its data
 * cannot match an old copy. Anything else reads the store.
 * A run that ends otherwise (superseded, abandoned, a failed write) keeps nothing.
 */
export class HeldSessions {
  readonly #kept = new Map<string, Kept>();
  #chars = 0;
  // The claims' connection's ready count, and the one the kept copies were kept under: a copy a run took
  // before a reconnect is not kept after it either (it may be of the Redis before).
  readonly #ready: ReadyCount;
  #keptUnder: number;

  /**
   * `connection`: the Redis connection the claims go through. Every copy is dropped once it was ready
   * again after a reconnect: a Redis restored from a backup (or a replica promoted) comes back through a
   * restart, and its writer records may then name a kept copy's claim as the last one while the transcript
   * has moved on since the backup; a copy read again costs one read.
   */
  constructor(
    private readonly store: SessionStore,
    private readonly limits: HeldSessionLimits = { sessions: 1000, chars: 64 * 1024 * 1024 },
    connection?: Redis,
  ) {
    this.#ready = connection ? readyCount(connection) : { count: 0 };
    this.#keptUnder = this.#ready.count;
  }

  // The ready count now, every kept copy dropped first if the connection was ready again since they were kept.
  #epoch(): number {
    if (this.#ready.count !== this.#keptUnder) {
      this.#kept.clear();
      this.#chars = 0;
      this.#keptUnder = this.#ready.count;
    }
    return this.#keptUnder;
  }

  /**
   * The session for a run that holds its claim, with `first` (the run's writer
   * line, then its user lines) appended in one write: the kept copy when `seen`
   * proves it current (undefined: a claim that proves nothing), else read from
   * the store after that write, so a late line of a superseded writer is either
   * in what is read or after the run's writer line (dropped by every reader).
   */
  async hold(
    sessionKey: string,
    seen: ClaimSeen | undefined,
    first: TranscriptEntry[],
  ): Promise<HeldSession> {
    const epoch = this.#epoch();
    const kept = this.#take(sessionKey);
    if (
      kept &&
      seen?.previousReleased &&
      seen.previousGeneration === kept.generation &&
      seen.touched === kept.touched
    ) {
      const held = new HeldSession(this, this.store, kept.record, kept, seen, epoch);
      await held.append(first);
      return held;
    }
    // A new session is created as `resolve` creates it, not `reset`: a write outside any claim (a
    // context-only message) may be creating it at this moment, and both must end in the one session the
    // key routes to. Read back after the write, so what that write put there is in the copy (a session
    // this write created holds nothing else: it is not read back).
    const { record, entries } = await this.store.open(sessionKey, first);
    return this.#copyOf(record, entries, seen, epoch);
  }

  #copyOf(
    record: SessionRecord,
    lines: TranscriptEntry[],
    seen: ClaimSeen | undefined,
    epoch: number,
  ): HeldSession {
    const copy = { visible: new VisibleLines(lines), chars: weightOfAll(lines) };
    return new HeldSession(this, this.store, record, copy, seen, epoch);
  }

  /** Forgets this process's copy of a session (it was written outside a claim, here). */
  forget(sessionKey: string): void {
    this.#take(sessionKey);
  }

  /**
   * Keeps a copy (most recently used last), dropping the oldest beyond the limits; not one a run took before
   * a reconnect since (`epoch`, as its `hold` found it).
   */
  keep(sessionKey: string, kept: Kept, epoch = this.#epoch()): void {
    this.#take(sessionKey);
    if (epoch !== this.#epoch()) return;
    this.#kept.set(sessionKey, kept);
    this.#chars += kept.chars;
    for (const [key, old] of this.#kept) {
      if (this.#kept.size <= this.limits.sessions && this.#chars <= this.limits.chars) break;
      this.#kept.delete(key);
      this.#chars -= old.chars;
    }
  }

  /** How many sessions are kept (for tests and metrics). */
  get size(): number {
    this.#epoch();
    return this.#kept.size;
  }

  #take(sessionKey: string): Kept | undefined {
    const kept = this.#kept.get(sessionKey);
    if (!kept) return undefined;
    this.#kept.delete(sessionKey);
    this.#chars -= kept.chars;
    return kept;
  }
}

/**
 * One run's session: the index record and the transcript as of the claim, plus
 * what the run appended since. Appends go to the store first; a failed append
 * leaves nothing to keep (whether the line reached the disk is unknown).
 */
export class HeldSession {
  #broken = false;

  constructor(
    private readonly owner: HeldSessions,
    private readonly store: SessionStore,
    readonly record: SessionRecord,
    /** The lines as read (a superseded writer's late lines dropped) plus this run's, and their weight. */
    private readonly copy: Pick<Kept, "visible" | "chars">,
    private readonly seen: ClaimSeen | undefined,
    private readonly epoch: number,
  ) {}

  /** The transcript as every reader sees it (a superseded writer's late lines dropped); read only. */
  entries(): readonly TranscriptEntry[] {
    return this.copy.visible.lines;
  }

  /** Appends entries to the transcript in one write. */
  async append(entries: TranscriptEntry[]): Promise<void> {
    if (entries.length === 0) return;
    try {
      await this.store.append(this.record.sessionId, entries);
    } catch (error) {
      this.#broken = true;
      throw error;
    }
    this.copy.visible.add(entries);
    this.copy.chars += weightOfAll(entries);
  }

  /**
   * Keeps the copy for the session's next run in this process: call once the
   * run's claim was released by its own settle (nothing else can have written
   * the session under that claim).
   */
  keep(): void {
    if (this.#broken || !this.seen) return;
    const { generation, touched } = this.seen;
    this.owner.keep(
      this.record.sessionKey,
      { record: this.record, ...this.copy, generation, touched },
      this.epoch,
    );
  }
}
