import { type Logger, pino } from "pino";

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

/** Creates the process's root logger. Level from `HUB_LOG_LEVEL` (default `info`; tests: `silent`). */
export function createLogger(
  options: { level?: string; name?: string; destination?: { write(line: string): void } } = {},
): HubLogger {
  const level = options.level ?? process.env.HUB_LOG_LEVEL ?? (process.env.VITEST ? "silent" : "info");
  const settings = {
    level,
    name: options.name ?? "hub",
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
  };
  return options.destination ? pino(settings, options.destination) : pino(settings);
}
