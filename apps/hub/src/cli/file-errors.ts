/** The file-system errors an operator fixes on the machine (owner, mode, a path that is a file), by code. */
const FIXES: Readonly<Record<string, string>> = {
  EACCES: "permission denied: run hub as the user that owns it, or give that user access",
  EPERM: "not permitted: run hub as the user that owns it, or give that user access",
  EROFS: "the file system is read-only: point HUB_STATE_DIR (or --config) at a writable place",
  ENOTDIR: "a part of the path is a file, not a directory: point HUB_STATE_DIR (or --config) at a directory",
  EEXIST: "a file is in the way where a directory belongs: move it, or point HUB_STATE_DIR elsewhere",
  ENOSPC: "the disk is full: free some space",
};

/**
 * One sentence for a file-system error the operator can fix (permissions, a file where a directory belongs),
 * naming the path and what to do; undefined for any other error (printed with its stack: a bug to report).
 */
export function fileErrorSentence(error: unknown): string | undefined {
  const e = error as NodeJS.ErrnoException | undefined;
  if (!e || typeof e.code !== "string" || typeof e.path !== "string") return undefined;
  const fix = FIXES[e.code];
  return fix ? `Cannot ${e.syscall ?? "use"} ${e.path}: ${fix}.` : undefined;
}
