import { z } from "zod";
import { HubError } from "./errors.js";

/** The log levels the hub's logger takes, most to least severe, then `silent` (no lines at all). */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/** One of `LOG_LEVELS`. */
export type LogLevel = (typeof LOG_LEVELS)[number];

const LogLevelSchema = z.enum(LOG_LEVELS);

/**
 * `level` as a log level, or a `HubError` that lists the valid ones and names
 * `variable` (e.g. `HUB_LOG_LEVEL`) when the level came from one.
 */
export function parseLogLevel(level: string, variable?: string): LogLevel {
  const parsed = LogLevelSchema.safeParse(level);
  if (parsed.success) return parsed.data;
  const valid = LOG_LEVELS.join(", ");
  throw new HubError(
    "log_level_invalid",
    variable
      ? `${variable}=${level} is not a log level; set ${variable} to one of ${valid}, or unset it for info.`
      : `"${level}" is not a log level; use one of ${valid}.`,
  );
}
