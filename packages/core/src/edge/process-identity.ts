import { createHash, randomUUID } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";
import { getEnvironmentData, setEnvironmentData } from "node:worker_threads";

/**
 * Tells this start of the process from an earlier one with the same pid (a restarted process). One value
 * for the whole process: a worker thread (an agent thread) gets its creator's, so no thread takes a live
 * sibling's pid with another start for a dead predecessor's.
 */
export const PROCESS_START = processStart();

function processStart(): string {
  const key = "hub.process-start";
  const inherited = getEnvironmentData(key);
  if (typeof inherited === "string") return inherited;
  const start = randomUUID().slice(0, 8);
  // Every worker thread created from now on (and theirs) starts with this value.
  setEnvironmentData(key, start);
  return start;
}

/**
 * The space this process's pid is unique in: this kernel's boot and PID namespace (Linux), so a pid
 * in a lease token means something here only when its space is this one. Two containers sharing a
 * host name (host networking) are both pid 1 in different spaces; two machines sharing a state
 * directory have different kernels. Elsewhere (no /proc) the host name stands in.
 */
export const PID_SPACE = pidSpace();

function pidSpace(): string {
  let where = hostname();
  try {
    where = `${readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()}/${readlinkSync("/proc/self/ns/pid")}`;
  } catch {
    // Not Linux: the host name is the best there is.
  }
  return createHash("sha256").update(where).digest("hex").slice(0, 10);
}

/**
 * Whether the process a lease token names (its pid space, pid and start) certainly no longer runs:
 * it is in this pid space and its pid is gone, or it is this pid from an earlier start. Anything
 * that cannot be known from here (another space: another machine, another container, a token of an
 * older version) counts as alive, and its lease is waited out.
 */
export function isDeadProcess(
  space: string | undefined,
  pidText: string | undefined,
  start: string | undefined,
): boolean {
  if (space !== PID_SPACE || !pidText || !start) return false;
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  // This pid: a lease of this very process (another account, a test) is alive, one of an earlier start is not.
  if (pid === process.pid) return start !== PROCESS_START;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}
