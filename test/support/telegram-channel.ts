import type { FakeTelegram } from "../fakes/src/index.js";

/** `channels.telegram` of a hub polling the fake Bot API, with Telegram's pacing off (the fake does not throttle). */
export function fakeTelegramChannel(
  telegram: FakeTelegram,
  allowFrom: ReadonlyArray<string | number>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const open = allowFrom.includes("*");
  return {
    botToken: telegram.token,
    apiRoot: telegram.apiRoot,
    dmPolicy: open ? "open" : "allowlist",
    allowFrom: allowFrom.map(String),
    pacing: { chatIntervalMs: 0, groupIntervalMs: 0, maxSendsPerSecond: 0 },
    ...extra,
  };
}
