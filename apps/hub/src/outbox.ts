import { join } from "node:path";
import { Outbox } from "@hub/core";
import type { HubBase } from "./stages/base.js";

/** How often old outbox files are deleted. */
const SWEEP_INTERVAL_MS = 15 * 60_000;

/**
 * The outbox of this installation: `<state dir>/outbox`, files kept at least
 * a day and twice `delivery.maxAge` (a segment older than that is never
 * sent, so its file is no longer needed).
 */
export function hubOutbox(base: Pick<HubBase, "stateDir" | "config">): Outbox {
  const retentionMs = Math.max(24 * 3600_000, 2 * base.config.delivery.maxAgeMs);
  return new Outbox(join(base.stateDir, "outbox"), retentionMs);
}

/** Deletes expired outbox files now and every 15 minutes until shutdown. */
export function startOutboxSweeper(base: HubBase, outbox: Outbox): void {
  startSweeper(base, "outbox", "expired outbox files", () => outbox.sweep());
}

/**
 * Runs `sweep` (which deletes expired files and says how many) now and every
 * 15 minutes until shutdown, logging what it removed or why it could not.
 */
export function startSweeper(
  base: Pick<HubBase, "logger" | "shutdown">,
  component: string,
  what: string,
  sweep: () => Promise<number>,
): void {
  const log = base.logger.child({ component });
  const run = () =>
    void sweep().then(
      (removed) => removed && log.info({ removed }, `deleted ${what}`),
      (error: unknown) => log.warn({ err: error }, `could not delete ${what}`),
    );
  run();
  const timer = setInterval(run, SWEEP_INTERVAL_MS);
  timer.unref();
  base.shutdown.rest.push(() => clearInterval(timer));
}
