import type { HubLogger } from "@hub/core";
import type { RunningHub } from "./hub.js";

/** A repeated stop signal this soon after the first is the same signal delivered twice. */
const DUPLICATE_SIGNAL_MS = 500;
/** How long the hub may take to stop past the drain budget (delivery flushes, run ends are announced). */
const STOP_GRACE_MS = 5000;

/** How the process reacts to signals. */
export interface LifecycleOptions {
  hub: Pick<RunningHub, "operations" | "stop">;
  logger: HubLogger;
  /** How long runs may take to finish after SIGTERM (ms). */
  drainMs: number;
  /** SIGHUP: reload channel allowlists and policies. */
  reload: () => void;
  /** After the hub stopped (e.g. stop a Redis the hub started itself). */
  /** Runs once the hub stopped, before the exit (given at most 5 s). */
  afterStop?: () => void | Promise<void>;
  exit?: (code: number) => void;
}

/**
 * SIGTERM/SIGINT drain the hub: intake stops at once (webhooks answer 503 with
 * Retry-After, Telegram's polling stops and hands its lease to a standby, chat.send says "send again"), runs in
 * flight get `drainMs` to finish, then the hub stops (delivery flushes what it
 * holds) and the process exits 0. Runs still going when the budget is spent keep
 * their `running` record and their lane lease, so restart recovery resumes
 * them. A second SIGTERM (later than 0.5 s after the first) exits at once, code 1. SIGHUP reloads channel policies.
 */
export function handleSignals(options: LifecycleOptions): { drain: (signal: string) => Promise<void> } {
  const { hub, logger } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let drainingSince: number | undefined;
  const drain = async (signal: string): Promise<void> => {
    if (drainingSince !== undefined) {
      // One signal delivered twice at once (by a wrapper and to the process group) is not a second request.
      if (Date.now() - drainingSince < DUPLICATE_SIGNAL_MS) return;
      logger.warn({ signal }, "second stop signal: exiting now; runs in flight resume after the restart");
      return exit(1);
    }
    drainingSince = Date.now();
    hub.operations.startDraining();
    const deadline = Date.now() + options.drainMs;
    const inFlight = () => hub.operations.runsInFlight();
    logger.info(
      { signal, drainMs: options.drainMs, runs: (await inFlight()).length },
      "draining: no new work is taken",
    );
    while ((await inFlight()).length > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const left = await inFlight();
    for (const { runId, sessionKey, channel } of left)
      logger.warn(
        { runId, sessionKey, channel },
        "run still in flight at the end of the drain budget; restart recovery resumes it unless it ends while the hub stops",
      );
    // Stopping waits for the runs' workers and lets delivery flush; past the budget (plus a little for delivery) we go
    // anyway. The hub is told when: the ends of runs whose replies are still in delivery are announced before.
    const stopBy = Math.max(deadline, Date.now()) + STOP_GRACE_MS;
    const stopped = await Promise.race([
      hub.stop({ by: stopBy }).then(
        () => true,
        (error: unknown) => {
          logger.error(
            { err: error },
            "stopping failed; exiting, restart recovery resumes what was in flight",
          );
          return true;
        },
      ),
      new Promise<false>((r) => setTimeout(() => r(false), stopBy - Date.now()).unref()),
    ]);
    if (!stopped)
      logger.warn(
        "the hub did not finish stopping within the drain budget; exiting, restart recovery resumes the rest",
      );
    await Promise.race([
      Promise.resolve(options.afterStop?.()).catch(() => {}),
      new Promise((r) => setTimeout(r, 5000).unref()),
    ]);
    // Counted now: a run still in flight at the budget's end may have ended while the hub stopped.
    logger.info({ interrupted: (await hub.operations.runsInFlight()).length }, "stopped");
    exit(0);
  };
  process.on("SIGTERM", () => void drain("SIGTERM"));
  process.on("SIGINT", () => void drain("SIGINT"));
  process.on("SIGHUP", () => options.reload());
  return { drain };
}
