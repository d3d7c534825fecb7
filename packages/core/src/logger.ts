import { type Logger, pino } from "pino";
import type { SecretRedactor } from "./redact.js";

/** The structured logger every package uses; one root per process, children per concern. */
export type HubLogger = Logger;

/** Paths pino replaces with "[redacted]" wherever they appear in a log object. */
export const REDACTED_PATHS = [
  "token",
  "*.token",
  "apiKey",
  "*.apiKey",
  "botToken",
  "*.botToken",
  "auth.token",
  "password",
  "*.password",
  "params.auth",
  "headers.authorization",
  "*.headers.authorization",
  "config.gateway.token",
  "config.models.providers.*.apiKey",
];

/** Where log lines go: anything with a `write(line)`. */
export interface LogDestination {
  write(line: string): void;
}

/**
 * Creates the process's root logger. Level from `HUB_LOG_LEVEL` (default
 * `info`; tests: `silent`). With `secrets`, every finished line (message,
 * fields, error messages, causes and stacks alike) passes through the
 * redactor before it is written, so no configured secret reaches the log
 * whichever string carried it.
 */
export function createLogger(
  options: { level?: string; name?: string; destination?: LogDestination; secrets?: SecretRedactor } = {},
): HubLogger {
  const level = options.level ?? process.env.HUB_LOG_LEVEL ?? (process.env.VITEST ? "silent" : "info");
  const settings = {
    level,
    name: options.name ?? "hub",
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
  };
  const destination: LogDestination = options.destination ?? pino.destination({ dest: 1, sync: true });
  const secrets = options.secrets;
  if (!secrets) return pino(settings, destination);
  return pino(settings, { write: (line: string) => destination.write(secrets.redact(line)) });
}
