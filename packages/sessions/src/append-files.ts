import { closeSync, constants, fstatSync, open as openFd, openSync, readFileSync } from "node:fs";
import { failpoint, writeAllSync } from "@hub/core";

/** Which file a path named when it was opened or created: a file replaced by rename has a new one. */
export interface FileId {
  dev: number;
  ino: number;
}

interface OpenFile {
  /** A plain descriptor, not a FileHandle: no object with a finalizer per file for the collector. */
  fd: number;
  usedAt: number;
}

// Opened for appending without O_CREAT: only `create` makes a file.
const APPEND_EXISTING = constants.O_WRONLY | constants.O_APPEND;
// Created for appending, only when missing (O_EXCL).
const CREATE_NEW = APPEND_EXISTING | constants.O_CREAT | constants.O_EXCL;

/**
 * How many transcripts may stay open: a quarter of the process's open-file limit (Node raises its soft
 * limit to the hard one at start), between 64 and 4,096; 256 where the limit cannot be read (not
 * Linux). With more sessions active at once than files kept open, every append opens and closes its
 * file again (in the bench's 400 chats at once: about 4% of the hub's CPU at a budget of 256).
 */
export function openFilesBudget(limits = readLimits()): number {
  const soft = /^Max open files\s+(\d+|unlimited)/m.exec(limits)?.[1];
  if (soft === undefined) return 256;
  const quarter = soft === "unlimited" ? 4096 : Math.floor(Number(soft) / 4);
  return Math.min(4096, Math.max(64, quarter));
}

// The process's resource limits as Linux lists them; empty where there is no /proc.
function readLimits(): string {
  try {
    return readFileSync("/proc/self/limits", "utf8");
  } catch {
    return "";
  }
}

/**
 * Append-only files kept open between writes (one `write` per append instead
 * of open + write + close), closed after `idleMs` without writes, at most
 * `max` at once. Each append is one O_APPEND write of whole lines, so a crash
 * leaves whole lines, as with `appendFile`. A file is made by `create` (O_EXCL, its
 * first line written at once); `append` never makes one.
 *
 * Writes are synchronous: a few hundred bytes into the page cache cost about
 * a microsecond and a syscall, where a thread-pool write costs ten times that
 * in hand-offs and promises, and a transcript's lines are that small. (Nothing
 * is fsynced either way.) So are opening an existing file (a path lookup) and
 * closing one. Only creating a file goes to the thread pool: it changes the
 * directory, and on a busy ext4 disk waits for the journal (done synchronously
 * in a run of new chats, the creates took 29% of the event loop's time, against
 * 10% in the thread pool).
 */
export class AppendFiles {
  readonly #open = new Map<string, OpenFile>();
  /** Creates under way (their exclusive open pending in the thread pool), by path; settled, never rejected. */
  readonly #creating = new Map<string, Promise<void>>();
  #sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly idleMs = 10_000,
    private readonly max = openFilesBudget(),
  ) {}

  /**
   * Appends `data` to the file at `path`, which must exist (see `create`): ENOENT when it does not. A file
   * moved aside or deleted is not made again without its first line.
   */
  async append(path: string, data: string): Promise<void> {
    // A create of this path in flight writes its first line first (opened here at once, this append's line
    // could land before it); its outcome is its own (EEXIST included).
    const creating = this.#creating.get(path);
    if (creating) await creating;
    const file = this.#get(path);
    try {
      writeAllSync(file.fd, Buffer.from(data, "utf8"));
    } catch (error) {
      // A failed write leaves no descriptor behind: the next append opens the file again.
      this.#close(path, file);
      throw error;
    }
  }

  /**
   * Creates the file at `path` with `data` as its first write and keeps it open for later appends, as
   * `append` does; undefined (nothing written) when the file already exists. Returns the new file's
   * identity (device and inode).
   *
   * An `append` to the same path while the create is pending waits for it, then opens its own descriptor
   * if the create did not keep one (the file existed: the create's EEXIST stays the create's).
   */
  async create(path: string, data: string): Promise<FileId | undefined> {
    if (this.#open.has(path)) return undefined; // open here: it exists
    const created = this.#createFirst(path, data);
    const done = created.then(
      () => {},
      () => {},
    );
    this.#creating.set(path, done);
    try {
      return await created;
    } finally {
      if (this.#creating.get(path) === done) this.#creating.delete(path);
    }
  }

  async #createFirst(path: string, data: string): Promise<FileId | undefined> {
    let fd: number;
    try {
      fd = await openInPool(path, CREATE_NEW);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return undefined;
      throw error;
    }
    try {
      failpoint("transcript.after-create"); // the file is there, empty: what a crash here leaves
      writeAllSync(fd, Buffer.from(data, "utf8"));
      const { dev, ino } = fstatSync(fd);
      // An append that opened the path meanwhile keeps its descriptor (both write with O_APPEND): one is enough.
      if (this.#open.has(path)) closeQuietly(fd);
      else this.#keep(path, fd);
      return { dev, ino };
    } catch (error) {
      closeQuietly(fd);
      throw error;
    }
  }

  #get(path: string): OpenFile {
    const now = Date.now();
    const known = this.#open.get(path);
    if (known) {
      // Most recently used last, so the oldest is closed first.
      this.#open.delete(path);
      known.usedAt = now;
      this.#open.set(path, known);
      return known;
    }
    return this.#keep(path, openSync(path, APPEND_EXISTING));
  }

  // Keeps an open file, closing the least recently used one beyond the budget.
  #keep(path: string, fd: number): OpenFile {
    if (this.#open.size >= this.max) {
      const [oldPath, old] = this.#open.entries().next().value as [string, OpenFile];
      this.#close(oldPath, old);
    }
    const file: OpenFile = { fd, usedAt: Date.now() };
    this.#open.set(path, file);
    this.#sweeper ??= setInterval(() => this.#sweep(), Math.max(1000, this.idleMs / 2)).unref();
    return file;
  }

  // Files unused for idleMs are closed (one timer for all files, not one per write).
  #sweep(): void {
    const before = Date.now() - this.idleMs;
    for (const [path, file] of [...this.#open]) if (file.usedAt <= before) this.#close(path, file);
    if (this.#open.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }

  #close(path: string, file: OpenFile): void {
    if (this.#open.get(path) === file) this.#open.delete(path);
    // Writes are synchronous, so none is in flight when it closes.
    closeQuietly(file.fd);
  }

  /** Closes every file. */
  closeAll(): void {
    for (const [path, file] of [...this.#open]) this.#close(path, file);
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }
}

/**
 * Opens (or creates) a file in the thread pool, mode 0600: its plain descriptor, or the open's error. For
 * opens that change a directory (O_CREAT), which can wait on the file system's journal.
 */
export function openInPool(path: string, flags: number | string): Promise<number> {
  return new Promise((resolve, reject) =>
    openFd(path, flags, 0o600, (error, fd) => (error ? reject(error) : resolve(fd))),
  );
}

// A failed close (EIO from write-back) leaves nothing to retry: the descriptor is released either way.
function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {}
}
