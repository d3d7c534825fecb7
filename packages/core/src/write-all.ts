import { writeSync } from "node:fs";

/**
 * Writes every byte of `bytes` to `fd` at its current offset. A regular file takes a small write whole;
 * a write may still take only part (a disk nearly full, a file size limit) without an error, and the
 * rest is then written, or its failure thrown.
 */
export function writeAllSync(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done);
}
