import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PID_SPACE } from "@hub/core/process-identity";
import { z } from "zod";

/**
 * Where one running hub process answers its probes, as `hub start` records it in
 * `<state dir>/health/<pid space>-<pid>.json`: one file per process, so processes sharing a state
 * directory never overwrite each other's, and the health check finds the process of its own
 * container (its pid space: this kernel's boot and PID namespace).
 */
export const HealthRecordSchema = z.object({
  host: z.string(),
  port: z.number().int().min(1).max(65535),
  pid: z.number().int().positive(),
  pidSpace: z.string(),
  roles: z.array(z.string()),
  /** When the process started (Linux: its start time in clock ticks since boot), so a reused pid is told apart. */
  started: z.string().optional(),
});
/** One process's probe address and identity (see `HealthRecordSchema`). */
export type HealthRecord = z.infer<typeof HealthRecordSchema>;

const DIR = "health";

function recordPath(stateDir: string, pidSpace: string, pid: number): string {
  return join(stateDir, DIR, `${pidSpace}-${pid}.json`);
}

/**
 * Records where this process answers its probes (for the health check, which cannot read the config
 * file), after removing the records of processes of this pid space that no longer run. Returns a
 * function that removes this process's record (when it stops).
 */
export function writeHealthRecord(
  stateDir: string,
  probes: { host: string; port: number },
  roles: ReadonlyArray<string>,
): () => void {
  mkdirSync(join(stateDir, DIR), { recursive: true, mode: 0o700 });
  for (const record of readHealthRecords(stateDir))
    if (record.pidSpace === PID_SPACE && !isRunning(record))
      rmSync(recordPath(stateDir, record.pidSpace, record.pid), { force: true });
  const started = startTime(process.pid);
  const record: HealthRecord = {
    ...probes,
    pid: process.pid,
    pidSpace: PID_SPACE,
    roles: [...roles],
    ...(started ? { started } : {}),
  };
  const path = recordPath(stateDir, PID_SPACE, process.pid);
  writeFileSync(path, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  return () => rmSync(path, { force: true });
}

/** Every readable record in the state directory (a file that is no record is skipped). */
export function readHealthRecords(stateDir: string): HealthRecord[] {
  let names: string[];
  try {
    names = readdirSync(join(stateDir, DIR)).filter((name) => name.endsWith(".json"));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    try {
      const parsed = HealthRecordSchema.safeParse(
        JSON.parse(readFileSync(join(stateDir, DIR, name), "utf8")),
      );
      return parsed.success ? [parsed.data] : [];
    } catch {
      return [];
    }
  });
}

/**
 * The records of hub processes that run in this pid space (this container, or this machine outside
 * containers), optionally only the one with `pid`: those are the processes a health check run here
 * speaks for. A record of another container or machine sharing the state directory is not one of them.
 */
export function localHealthRecords(stateDir: string, pid?: number): HealthRecord[] {
  return readHealthRecords(stateDir).filter(
    (r) => r.pidSpace === PID_SPACE && (pid === undefined || r.pid === pid) && isRunning(r),
  );
}

// Whether the process that wrote the record still runs: its pid is taken, and (where the start time is
// known) by a process started when it was, not by another that got the pid after the hub was killed.
function isRunning({ pid, started }: HealthRecord): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const now = started === undefined ? undefined : startTime(pid);
  return now === undefined || now === started;
}

// A process's start time (field 22 of /proc/<pid>/stat, after the name in parentheses); undefined off Linux.
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}
