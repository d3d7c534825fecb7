import { type Logger, pino } from "pino";
import { parseLogLevel } from "./log-level.js";
import { redactLogFields, redactLogValue } from "./log-redaction.js";
import type { SecretRedactor } from "./redact.js";

export { REDACTED_PATHS } from "./log-redaction.js";

/** The structured logger every package uses; one root per process, children per concern. */
export type HubLogger = Logger;

/** Where log lines go: anything with a `write(line)`. */
export interface LogDestination {
  write(line: string): void;
}

/**
 * Creates the process's root logger. Level from `HUB_LOG_LEVEL` (default
 * `info`; tests: `silent`; a level pino does not know is a `HubError` listing
 * the valid ones). With `secrets`, every finished line (message,
 * fields, error messages, causes and stacks alike) passes through the
 * redactor before it is written, so no configured secret reaches the log
 * whichever string carried it.
 */
export function createLogger(
  options: { level?: string; name?: string; destination?: LogDestination; secrets?: SecretRedactor } = {},
): HubLogger {
  const level =
    options.level !== undefined
      ? parseLogLevel(options.level)
      : parseLogLevel(process.env.HUB_LOG_LEVEL || (process.env.VITEST ? "silent" : "info"), "HUB_LOG_LEVEL");
  // REDACTED_PATHS are censored by our own copy-on-write pass, not pino's `redact` option: that one
  // clones and walks every field of every line and every child logger's bindings (its wildcard paths
  // apply to all of them), where ours returns the object as it is when nothing in it is a secret.
  const settings = {
    level,
    name: options.name ?? "hub",
    formatters: { log: redactLogFields, bindings: redactLogFields },
    serializers: { err: (error: unknown) => redactLogValue("err", pino.stdSerializers.err(error as Error)) },
  };
  const destination: LogDestination = options.destination ?? pino.destination({ dest: 1, sync: true });
  const secrets = options.secrets;
  const logger = secrets
    ? pino(settings, { write: (line: string) => destination.write(secrets.redact(line)) })
    : pino(settings, destination);
  // pino runs `formatters.bindings` on the root's bindings only: a child's are censored on the way in
  // (children of children inherit this method).
  const child = logger.child;
  logger.child = function (this: HubLogger, bindings, childOptions) {
    return child.call(this, redactLogFields(bindings), childOptions);
  } as HubLogger["child"];
  return logger;
}
