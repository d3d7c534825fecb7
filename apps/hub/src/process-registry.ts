import { hostname } from "node:os";
import { HUB_ROLES, type HubRole, PROCESS_START } from "@hub/core";
import { scanKeys } from "@hub/queue";
import type { Redis } from "ioredis";
import { z } from "zod";

/** One running hub process of an installation, as it announces itself in Redis. */
export const LiveProcessSchema = z.object({
  host: z.string(),
  pid: z.number().int(),
  roles: z.array(z.string()),
  startedAt: z.number(),
});
/** A running hub process (see `LiveProcessSchema`). */
export type LiveProcess = z.infer<typeof LiveProcessSchema>;

/** How often a process renews its entry; the entry lives three times as long. */
const RENEW_MS = 10_000;

const keyOf = (prefix: string, start: string) => `${prefix}:process:${hostname()}:${process.pid}:${start}`;

/**
 * Announces this process and its roles in Redis (`<prefix>:process:<host>:<pid>:<start>`, renewed every
 * 10 s, gone 30 s after it stops renewing, removed at a clean stop), so `hub status` shows which processes
 * run which roles and says when a role has none: with the roles split, a queue nobody takes from is
 * otherwise invisible (every process left is ready). Returns the function that removes the entry.
 */
export function announceProcess(
  redis: Redis,
  prefix: string,
  roles: ReadonlyArray<string>,
): () => Promise<void> {
  const key = keyOf(prefix, PROCESS_START);
  const entry: LiveProcess = { host: hostname(), pid: process.pid, roles: [...roles], startedAt: Date.now() };
  const renew = () => redis.set(key, JSON.stringify(entry), "PX", RENEW_MS * 3).catch(() => {});
  void renew();
  const timer = setInterval(renew, RENEW_MS).unref();
  return async () => {
    clearInterval(timer);
    await redis.del(key).catch(() => {});
  };
}

/**
 * The installation's running processes (those that renewed their entry lately), oldest first. An entry of
 * this machine whose process is gone (killed, or stopped by a second signal without removing it) is left
 * out and removed at once, instead of being listed until it expires.
 */
export async function liveProcesses(redis: Redis, prefix: string): Promise<LiveProcess[]> {
  const found: LiveProcess[] = [];
  for (const key of await scanKeys(redis, `${prefix}:process:*`)) {
    const entry = parseEntry(await redis.get(key));
    if (!entry) continue;
    if (entry.host === hostname() && !processExists(entry.pid)) await redis.del(key);
    else found.push(entry);
  }
  return found.sort((a, b) => a.startedAt - b.startedAt);
}

// An entry as this version writes it; anything else (another version's, or expired meanwhile) is none.
function parseEntry(raw: string | null): LiveProcess | undefined {
  if (!raw) return undefined;
  try {
    const parsed = LiveProcessSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

// Signal 0 checks that a process exists without touching it (EPERM: it exists, owned by another user).
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The hub's roles that no running process has (`hub status` warns about each). */
export function missingRoles(processes: ReadonlyArray<LiveProcess>): HubRole[] {
  const covered = new Set(processes.flatMap((p) => p.roles));
  return HUB_ROLES.filter((role) => !covered.has(role));
}
