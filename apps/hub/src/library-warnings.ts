import { format } from "node:util";
import type { HubLogger } from "@hub/core";

/**
 * Sends what libraries print with `console.warn` (ioredis's "[WARN] ... a password was supplied", for
 * one) to the hub's log as a warning line, so a running hub writes nothing but its JSON lines (and the
 * log's secret redaction applies). The hub's own output never goes through `console.warn`.
 */
export function logLibraryWarnings(logger: HubLogger): void {
  console.warn = (...args: unknown[]) => {
    const text = format(...args).replace(/^\[WARN\]\s*/, "");
    logger.warn({ source: "library" }, text);
  };
}
