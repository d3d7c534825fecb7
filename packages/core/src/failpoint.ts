import { writeSync } from "node:fs";

/**
 * Fault injection at named steps, for crash tests with real processes: the
 * step between two Redis writes, inside a send. `HUB_FAILPOINTS` lists
 * `name=action[@n]` pairs, comma-separated; `action` is `kill` (SIGKILL this
 * process, like a crash), `stop` (SIGSTOP it, like a frozen VM; the test
 * sends SIGCONT), `throw` (the step fails with an error, like a full disk) or
 * `exit` (the thread it runs on exits with code 1: an agent thread ends alone, as
 * a crash in it would end it; on the main thread, the process), taken on the n-th
 * time the step is reached (default 1; counted per thread, each reading the variable).
 * Unset (production), a failpoint costs one map lookup.
 */
type FailAction = { action: "kill" | "stop" | "throw" | "exit"; at: number; hits: number };

function parse(spec: string | undefined): Map<string, FailAction> {
  const points = new Map<string, FailAction>();
  for (const part of (spec ?? "").split(",")) {
    const match = /^\s*([\w.-]+)=(kill|stop|throw|exit)(?:@(\d+))?\s*$/.exec(part);
    if (match)
      points.set(match[1]!, { action: match[2] as FailAction["action"], at: Number(match[3] ?? 1), hits: 0 });
  }
  return points;
}

const points = parse(process.env.HUB_FAILPOINTS);

/** Names of the steps where a failpoint can be set (documented here so tests and code agree). */
export type FailpointName =
  | "admission.before-admit"
  | "admission.after-admit"
  | "run.before-push"
  | "run.before-settle"
  | "run.after-settle"
  | "run.before-late-requeue"
  | "run.after-take-steering"
  | "run.after-steered-write"
  | "run.after-finalize"
  | "transcript.before-append"
  | "transcript.after-create"
  | "delivery.before-send"
  | "delivery.after-send"
  | "delivery.before-preview"
  | "delivery.after-preview"
  | "mailbox.after-yield"
  | "mailbox.after-claim-here";

/** Kills or freezes this process here, ends this thread, or throws, if `HUB_FAILPOINTS` asks for it. */
export function failpoint(name: FailpointName): void {
  const point = points.get(name);
  if (!point) return;
  point.hits += 1;
  if (point.hits !== point.at) return;
  // Written at once, not queued: a worker thread's process.stderr goes through the main thread, too late
  // for a line written just before the thread exits.
  writeSync(2, `failpoint ${name}: ${point.action}\n`);
  if (point.action === "throw") throw new Error(`failpoint ${name}: an injected failure`);
  if (point.action === "exit") process.exit(1);
  process.kill(process.pid, point.action === "kill" ? "SIGKILL" : "SIGSTOP");
}
