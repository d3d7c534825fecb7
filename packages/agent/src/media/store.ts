import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { chmod, mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { capBytes } from "@hub/core";

/** How long a saved file counts as in use by the run that saved it (not removed to fit the cap). */
const IN_USE_MS = 60_000;

/** How long downloaded attachments are kept, and how much of them. */
export interface MediaRetention {
  /** Files older than this are removed (ms). */
  maxAgeMs: number;
  /** The oldest files go first once all of them pass this (bytes). */
  maxTotalBytes: number;
}

/** A downloaded attachment on disk. */
export interface StoredMedia {
  path: string;
  size: number;
}

/**
 * Downloaded attachments under `<state dir>/media` (never in Redis), one file
 * per platform reference: a resumed run finds what its first attempt fetched.
 * Files are written under a temporary name and renamed when complete, so a
 * crash never leaves a half file under a real name; every save prunes files
 * past the retention limits.
 */
export class MediaStore {
  #pruning: Promise<number> | undefined;

  constructor(
    readonly dir: string,
    private readonly retention: MediaRetention,
  ) {}

  /** The file name of an attachment: a hash of where it came from (no user text in paths). */
  keyOf(channel: string, accountId: string, ref: string): string {
    return createHash("sha256").update(`${channel}\0${accountId}\0${ref}`).digest("hex").slice(0, 40);
  }

  /** The stored file of `key`, when an earlier attempt downloaded it. */
  async find(key: string): Promise<StoredMedia | undefined> {
    const path = join(this.dir, key);
    const info = await stat(path).catch(() => undefined);
    return info?.isFile() ? { path, size: info.size } : undefined;
  }

  /** Writes a download to disk (at most `maxBytes`, else `MediaTooLargeError` and nothing kept). */
  async save(key: string, body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StoredMedia> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = join(this.dir, key);
    const partial = `${path}.${randomBytes(6).toString("hex")}.part`;
    try {
      await pipeline(capBytes(body, maxBytes), createWriteStream(partial, { mode: 0o600 }));
      await chmod(partial, 0o600);
      await rename(partial, path);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    const size = (await stat(path)).size;
    this.#pruning ??= this.prune().finally(() => {
      this.#pruning = undefined;
    });
    await this.#pruning;
    return { path, size };
  }

  /** Removes files older than the retention age, then the oldest until the total fits; returns how many went. */
  async prune(now = Date.now()): Promise<number> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const files: Array<{ path: string; size: number; at: number }> = [];
    let removed = 0;
    for (const name of names) {
      const path = join(this.dir, name);
      const info = await stat(path).catch(() => undefined);
      if (!info?.isFile()) continue;
      // A partial file older than the age limit is a crashed download.
      if (now - info.mtimeMs > this.retention.maxAgeMs) {
        await rm(path, { force: true });
        removed++;
      } else files.push({ path, size: info.size, at: info.mtimeMs });
    }
    let total = files.reduce((sum, f) => sum + f.size, 0);
    for (const file of files.sort((a, b) => a.at - b.at)) {
      if (total <= this.retention.maxTotalBytes) break;
      // Files of the last minute are in use (a run reads what it just saved; a download still being written
      // is a `.part`): the store may pass its cap for that minute rather than pull a file from under a run.
      if (now - file.at < IN_USE_MS || file.path.endsWith(".part")) continue;
      await rm(file.path, { force: true });
      total -= file.size;
      removed++;
    }
    return removed;
  }
}
