import type { HubLogger } from "@hub/core";
import { type Logger, LogLevel } from "@slack/bolt";

/**
 * Bolt's and the Web API client's logger interface over the hub's pino logger, so
 * their lines are structured and carry `channel` and `accountId`. Bolt's info lines
 * are chatty, so they go to debug; warnings and errors stay what they are, except an
 * error `saidElsewhere` (the hub reports it itself), which goes to debug too.
 */
export function boltLogger(log: HubLogger, saidElsewhere: (text: string) => boolean = () => false): Logger {
  let level: LogLevel = LogLevel.INFO;
  const text = (parts: unknown[]) =>
    parts
      .map((p) => (p instanceof Error ? p.message : typeof p === "string" ? p : JSON.stringify(p)))
      .join(" ");
  return {
    debug: (...msg: unknown[]) => log.debug({ source: "bolt" }, text(msg)),
    info: (...msg: unknown[]) => log.debug({ source: "bolt" }, text(msg)),
    warn: (...msg: unknown[]) => log.warn({ source: "bolt" }, text(msg)),
    error: (...msg: unknown[]) => {
      const line = text(msg);
      if (saidElsewhere(line)) log.debug({ source: "bolt" }, line);
      else log.error({ source: "bolt" }, line);
    },
    setLevel: (next: LogLevel) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => {},
  };
}
