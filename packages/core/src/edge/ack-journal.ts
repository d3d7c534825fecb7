import {
  closeSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  futimesSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { HubLogger } from "../logger.js";
import { writeAllSync } from "../write-all.js";
import { describeError } from "./errors.js";
import { isDeadProcess, PID_SPACE, PROCESS_START } from "./process-identity.js";

// One line of a journal: a delivery acknowledged before its admission finished, or the end of its wait.
type Line<T> = { acked: string; delivery: T } | { settled: string };
const lineSchema = <T>(delivery: z.ZodType<T>) =>
  z.union([z.object({ acked: z.string(), delivery }), z.object({ settled: z.string() })]);

// A journal's file name: `<pid space>-<pid>-<start>.jsonl`, the identity `isDeadProcess` reads; a journal
// being adopted is first renamed to `<adopter's identity>.claim<n>.jsonl` (see `adoptOrphans`).
const NAME = /^([0-9a-f]+)-(\d+)-([0-9a-f]+)(?:\.claim\d+)?\.jsonl$/;
// A compacted journal being written (see `#compact`): left behind only by a process that died meanwhile.
const COMPACTING = /^([0-9a-f]+)-(\d+)-([0-9a-f]+)\.compacting$/;

/**
 * A journal that never empties (a record still waiting while others come and go: a busy account, an
 * admission that keeps failing) is rewritten with only its waiting records once it holds this many bytes
 * of lines no longer needed (settled records and their settles); otherwise it would grow as long as the
 * process runs. Counted apart from the waiting records' own bytes, so a large backlog (Redis down for a
 * while) is not rewritten at every settle while it drains.
 */
export const COMPACT_AFTER_BYTES = 1024 * 1024;

/**
 * A journal untouched this long is an orphan whoever wrote it: a live process settles a record once its
 * admission is over and, while it still tries (Redis down), touches the file at every try (at most 30 s
 * apart), so only a dead one (or one frozen that long) leaves a file this old. It is how the journal of a
 * process in another pid space is found: a container restarted after a crash has a new PID namespace, so
 * its predecessor's pid means nothing here.
 */
export const ORPHAN_IDLE_MS = 5 * 60_000;

/**
 * Platform deliveries this process acknowledged before their admission finished, kept on local disk until
 * admitted: a platform that never resends what it was told it got (Slack's Events API after its 200, which
 * it wants within 3 s; WhatsApp's socket, which acknowledges every message it receives) would otherwise
 * lose a message whose process died, or whose Redis was down, in that window. `T` is what the adapter needs
 * to admit the delivery again, checked by the schema it gives when read back.
 * Each process appends to a file of its own (`<dir>/<pid space>-<pid>-<start>.jsonl`), and a record is
 * fsynced before it returns (unless asked not to). The next start of a process sharing the directory adopts what dead
 * processes (of its pid space) left unsettled: copied into its own journal first, then their files go.
 * A journal adopted while its process still runs (frozen past ORPHAN_IDLE_MS) is noticed by that process
 * at its next record, which then goes into a new file (see `record`).
 */
export class AckJournal<T> {
  readonly #stem = `${PID_SPACE}-${process.pid}-${PROCESS_START}`;
  readonly #path: string;
  #fd: number | undefined;
  #next = 0;
  #claims = 0;
  #stopped = false;
  // The records not settled yet, by key, as their lines: what a compaction keeps.
  readonly #open = new Map<string, string>();
  // Bytes of the file (since it was opened or compacted), and of its waiting records' lines.
  #appended = 0;
  #waiting = 0;

  readonly #schema: z.ZodType<Line<T>>;

  /**
   * `deliveries` reads a record back (a line it refuses is skipped); `label` begins the journal's log lines;
   * `compactAfterBytes`: see COMPACT_AFTER_BYTES.
   */
  constructor(
    private readonly dir: string,
    deliveries: z.ZodType<T>,
    private readonly logger?: HubLogger,
    private readonly label = "channel",
    private readonly compactAfterBytes = COMPACT_AFTER_BYTES,
  ) {
    this.#path = join(dir, `${this.#stem}.jsonl`);
    this.#schema = lineSchema(deliveries) as z.ZodType<Line<T>>;
  }

  /**
   * Records a delivery about to be acknowledged early; synchronous and on disk before it returns. Its
   * file is checked after the fsync: another process that adopted it (renamed first, then read) before
   * that check may not have read this record, so it is written again into a new file (a duplicate the
   * admission's dedupe absorbs); one that adopts it after the check reads it. `sync: false` leaves out the
   * fsync: the record survives the process's death, not the machine's (see `sync`).
   */
  record(delivery: T, options: { sync?: boolean } = {}): string {
    const key = `${PROCESS_START}.${this.#next++}`;
    const line = lineOf({ acked: key, delivery: withoutUndefined(delivery) });
    const sync = options.sync ?? true;
    this.#append(line, sync);
    if (!this.#stillOurs()) {
      this.close();
      this.#append(line, sync);
    }
    this.#open.set(key, line);
    this.#waiting += Buffer.byteLength(line);
    return key;
  }

  /** Puts what was recorded without an fsync on disk. Never throws (it is tried again at the next call). */
  sync(): void {
    if (this.#fd === undefined) return;
    try {
      fsyncSync(this.#fd);
    } catch {
      // The records are in the page cache: they survive this process either way.
    }
  }

  /**
   * The delivery's admission is over (taken, a duplicate, or refused); one still failing is not settled.
   * Never throws: a settle the disk refuses leaves the record to the next start, whose admission of it
   * is a duplicate.
   */
  settle(key: string): void {
    const line = this.#open.get(key);
    if (this.#stopped || line === undefined) return;
    this.#open.delete(key);
    this.#waiting -= Buffer.byteLength(line);
    try {
      this.#append(lineOf({ settled: key }), false);
      // Nothing left to wait for: the file goes, so a quiet process keeps none.
      if (this.#open.size === 0) this.#remove();
    } catch (error) {
      this.logger?.warn(
        { err: describeError(error), path: this.#path },
        `${this.label}: an early-acknowledged delivery's end could not be journaled; the next start admits it again (a duplicate, ignored)`,
      );
      return;
    }
    if (this.#open.size > 0 && this.#appended - this.#waiting > this.compactAfterBytes) this.#compactOrWarn();
  }

  #compactOrWarn(): void {
    try {
      this.#compact();
    } catch (error) {
      // Tried again after the next settle: nothing is lost, the journal is only longer than it needs to be.
      this.logger?.warn(
        { err: describeError(error), path: this.#path },
        `${this.label}: the early-acknowledged deliveries' journal could not be compacted; it keeps every line until its records settle`,
      );
      try {
        rmSync(join(this.dir, `${this.#stem}.compacting`), { force: true });
      } catch {
        // Removed by the next start's adoption (see #removeIfLeftOver).
      }
      this.#appended = this.#waiting;
    }
  }

  /**
   * A record is still being tried: the file's time is moved on, so no other process takes it for an orphan
   * (see ORPHAN_IDLE_MS). Never throws: at worst another process admits the event too (a duplicate, ignored).
   */
  touch(): void {
    if (this.#fd === undefined || this.#stopped) return;
    try {
      const now = new Date();
      futimesSync(this.#fd, now, now);
    } catch {
      // The next try touches it again.
    }
  }

  /**
   * What processes that no longer run left acknowledged and unsettled, recorded anew in this journal
   * (so a crash of this process before they are admitted leaves them to the next start), with the keys
   * to settle them by; their files are removed.
   */
  adoptOrphans(now = Date.now()): Array<{ key: string; delivery: T }> {
    const adopted: Array<{ key: string; delivery: T }> = [];
    for (const name of this.#orphanFiles(now)) {
      // Claimed by a rename first: its writer, if it still runs, notices at its next record (see `record`),
      // and a second adopter finds nothing to rename.
      const path = join(this.dir, `${this.#stem}.claim${this.#claims++}.jsonl`);
      try {
        renameSync(join(this.dir, name), path);
      } catch {
        continue;
      }
      for (const delivery of this.#unsettled(readFileSync(path, "utf8")))
        adopted.push({ key: this.record(delivery), delivery });
      rmSync(path, { force: true });
    }
    return adopted;
  }

  /**
   * The adapter stopped: what is still unsettled stays on disk for the next start, whatever the tries
   * still running say (refused by a stopped adapter, they would end as given up and settle unadmitted).
   */
  stop(): void {
    this.#stopped = true;
    this.close();
  }

  /** Closes the file (what is unsettled stays on disk for the next start). */
  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  // Other processes' journals that are orphans: their process is gone (this pid space), or they are idle.
  #orphanFiles(now: number): string[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    return names.filter((name) => {
      this.#removeIfLeftOver(name, now);
      const m = NAME.exec(name);
      if (m === null || join(this.dir, name) === this.#path) return false;
      if (isDeadProcess(m[1], m[2], m[3])) return true;
      const modified = statSync(join(this.dir, name), { throwIfNoEntry: false })?.mtimeMs;
      return modified !== undefined && now - modified > ORPHAN_IDLE_MS;
    });
  }

  // A compaction's file its process did not live to rename: that process is gone, or the file is idle (a
  // live process writes and renames it in one synchronous step).
  #removeIfLeftOver(name: string, now: number): void {
    const m = COMPACTING.exec(name);
    if (!m) return;
    const path = join(this.dir, name);
    const modified = statSync(path, { throwIfNoEntry: false })?.mtimeMs;
    if (isDeadProcess(m[1], m[2], m[3]) || (modified !== undefined && now - modified > ORPHAN_IDLE_MS))
      rmSync(path, { force: true });
  }

  /**
   * The journal rewritten with only its waiting records: written and fsynced beside it, then renamed over
   * it, so a crash at any point leaves one whole journal (the old or the new) holding every waiting record.
   * Not done once another process adopted the file (its next record starts a new one, see `record`).
   */
  #compact(): void {
    if (!this.#stillOurs()) return;
    const compacting = join(this.dir, `${this.#stem}.compacting`);
    const bytes = Buffer.from([...this.#open.values()].join(""));
    const fd = openSync(compacting, "w", 0o600);
    try {
      writeAllSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(compacting, this.#path);
    // The rename itself on disk: a machine crash must not bring the old name back without the records
    // fsynced into the new file since.
    syncDirectory(this.dir);
    // Open again at once: `touch` keeps the file's time moving while a record is still tried.
    this.close();
    this.#fd = openSync(this.#path, "a", 0o600);
    this.#appended = bytes.length;
  }

  #append(text: string, sync: boolean): void {
    if (this.#fd === undefined) {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      this.#fd = openSync(this.#path, "a", 0o600);
      this.#appended = fstatSync(this.#fd).size;
    }
    const fd = this.#fd;
    const bytes = Buffer.from(text);
    const before = fstatSync(fd).size;
    try {
      writeAllSync(fd, bytes);
      if (sync) fsyncSync(fd);
      this.#appended += bytes.length;
    } catch (error) {
      // The part written is taken back, so the next line is not glued to it (both would be unreadable).
      try {
        ftruncateSync(fd, before);
      } catch {
        // Left torn: the next start skips that line (its event was not acknowledged: this throws).
      }
      throw error;
    }
  }

  // Whether the file at this journal's path is still the one this process writes to.
  #stillOurs(): boolean {
    if (this.#fd === undefined) return false;
    const onDisk = statSync(this.#path, { throwIfNoEntry: false });
    const open = fstatSync(this.#fd);
    return onDisk !== undefined && onDisk.ino === open.ino && onDisk.dev === open.dev;
  }

  #remove(): void {
    this.close();
    rmSync(this.#path, { force: true });
    this.#appended = 0;
  }

  // The deliveries of a journal's text that were never settled (a torn last line is skipped).
  #unsettled(text: string): T[] {
    const acked = new Map<string, T>();
    for (const raw of text.split("\n")) {
      let parsed: Line<T> | undefined;
      try {
        parsed = this.#schema.parse(JSON.parse(raw));
      } catch {
        continue;
      }
      if ("acked" in parsed) acked.set(parsed.acked, parsed.delivery);
      else acked.delete(parsed.settled);
    }
    return [...acked.values()];
  }
}

// One journal line's text.
const lineOf = <T>(line: Line<T>): string => `${JSON.stringify(line)}\n`;

// fsync of a directory (its entries: a rename); where the platform cannot, the rename stays in the cache.
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Not every platform fsyncs a directory: the rename is on disk at the file system's next commit.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

// What a record holds is what JSON keeps of it (no undefined fields; a protobuf message's own toJSON).
const withoutUndefined = <T>(delivery: T): T => JSON.parse(JSON.stringify(delivery));
