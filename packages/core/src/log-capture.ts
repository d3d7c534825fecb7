import { createLogger, type HubLogger } from "./logger.js";

/** A logger that keeps what it logs: for tests (the hub's and a channel plugin's) of what a line says. */
export interface CapturedLogs {
  logger: HubLogger;
  /** Every line as written (JSON text), in order. */
  readonly lines: string[];
  /** The same lines parsed. */
  readonly records: Array<Record<string, unknown>>;
}

/** A logger at `level` (default `info`) whose lines are kept, as written and parsed. */
export function captureLogs(level = "info"): CapturedLogs {
  const lines: string[] = [];
  const records: Array<Record<string, unknown>> = [];
  const write = (line: string) => {
    lines.push(line);
    records.push(JSON.parse(line) as Record<string, unknown>);
  };
  return { logger: createLogger({ level, destination: { write } }), lines, records };
}
