import type { HubLogger } from "@hub/core";
import { type Logger, LogLevel } from "@slack/bolt";

/**
 * Bolt's and the Web API client's logger interface over the hub's pino logger, so
 * their lines are structured and carry `channel` and `accountId`. Bolt's info lines
 * are chatty, so they go to debug; warnings and errors stay what they are.
 */
export function boltLogger(log: HubLogger): Logger {
  let level: LogLevel = LogLevel.INFO;
  const text = (parts: unknown[]) =>
    parts
      .map((p) => (p instanceof Error ? p.message : typeof p === "string" ? p : JSON.stringify(p)))
      .join(" ");
  return {
    debug: (...msg: unknown[]) => log.debug({ source: "bolt" }, text(msg)),
    info: (...msg: unknown[]) => log.debug({ source: "bolt" }, text(msg)),
    warn: (...msg: unknown[]) => log.warn({ source: "bolt" }, text(msg)),
    error: (...msg: unknown[]) => log.error({ source: "bolt" }, text(msg)),
    setLevel: (next: LogLevel) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => {},
  };
}
