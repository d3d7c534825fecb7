import { type FileHandle, open } from "node:fs/promises";

interface OpenFile {
  handle: Promise<FileHandle>;
  writing: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Append-only files kept open between writes (one `write` per append instead
 * of open + write + close), closed after `idleMs` without writes, at most
 * `max` at once. Each write is one O_APPEND write, so a crash leaves whole
 * lines, as with `appendFile`.
 */
export class AppendFiles {
  readonly #open = new Map<string, OpenFile>();

  constructor(
    private readonly idleMs = 10_000,
    private readonly max = 256,
  ) {}

  async append(path: string, data: string): Promise<void> {
    const file = this.#get(path);
    file.writing++;
    clearTimeout(file.timer);
    try {
      const handle = await file.handle;
      await handle.write(data);
    } catch (error) {
      // A failed open or write leaves no handle behind: the next append opens the file again.
      if (this.#open.get(path) === file) this.#open.delete(path);
      throw error;
    } finally {
      file.writing--;
      if (file.writing === 0 && this.#open.get(path) === file) {
        file.timer = setTimeout(() => this.#close(path, file), this.idleMs);
        file.timer.unref();
      }
    }
  }

  #get(path: string): OpenFile {
    const known = this.#open.get(path);
    if (known) {
      // Most recently used last, so the oldest is closed first.
      this.#open.delete(path);
      this.#open.set(path, known);
      return known;
    }
    if (this.#open.size >= this.max) {
      for (const [oldPath, old] of this.#open) {
        if (old.writing > 0) continue;
        this.#close(oldPath, old);
        break;
      }
    }
    const file: OpenFile = { handle: open(path, "a", 0o600), writing: 0, timer: undefined };
    file.handle.catch(() => {});
    this.#open.set(path, file);
    return file;
  }

  #close(path: string, file: OpenFile): void {
    if (file.writing > 0) return;
    clearTimeout(file.timer);
    if (this.#open.get(path) === file) this.#open.delete(path);
    void file.handle.then((h) => h.close()).catch(() => {});
  }

  /** Closes every file. */
  closeAll(): void {
    for (const [path, file] of [...this.#open]) this.#close(path, file);
  }
}
