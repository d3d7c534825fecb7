/** Close codes after which Discord will not let the bot back in until the operator fixes something. */
const FATAL_CLOSES: Record<number, string> = {
  4004: "Discord refused the bot token (close 4004); set a valid channels.discord.token or DISCORD_BOT_TOKEN",
  4010: "Discord refused the shard settings (close 4010)",
  4011: "Discord requires sharding for this bot (close 4011)",
  4012: "Discord refused the gateway API version (close 4012)",
  4013: "Discord refused the gateway intents as invalid (close 4013)",
  4014: "Discord refused the Message Content intent (close 4014); enable it in the Developer Portal under Bot > Privileged Gateway Intents, then restart",
};

/** What the recoverable close codes mean (Discord's gateway close codes, WebSocket's 1xxx codes). */
const CLOSE_MEANINGS: Record<number, string> = {
  1000: "a normal close",
  1001: "going away",
  1005: "no status given",
  1006: "the connection dropped without a close frame",
  1011: "an internal error",
  4000: "an unknown error",
  4001: "the bot sent an unknown opcode",
  4002: "the bot sent a payload Discord could not decode",
  4003: "the bot sent a payload before identifying",
  4005: "the bot identified twice",
  4007: "the bot resumed with an invalid sequence number",
  4008: "the bot sent payloads too fast",
  4009: "the session timed out",
};

/** Close codes after which @discordjs/ws identifies again rather than resuming. */
const IDENTIFY_AFTER = new Set([1000, 4003, 4005, 4007, 4008]);

/** What the client does after a recoverable close: resume the session or identify again. */
export type Recovery = "resume" | "identify";

function nextStep(recovery: Recovery): string {
  return recovery === "resume" ? "resuming" : "identifying again";
}

/**
 * Why Discord closed the gateway connection with `code`, in words an operator can
 * act on, with what the client does next (`recovery`, else what @discordjs/ws does
 * after that code).
 */
export function describeClose(code: number | undefined, recovery?: Recovery): string {
  if (code === undefined) return "the gateway connection closed";
  const fatal = FATAL_CLOSES[code];
  if (fatal) return fatal;
  const meaning = CLOSE_MEANINGS[code];
  const next = nextStep(recovery ?? (IDENTIFY_AFTER.has(code) ? "identify" : "resume"));
  return `Discord closed the gateway connection with code ${code}${meaning ? ` (${meaning})` : ""}; ${next}`;
}

/**
 * Why the bot's own client closed the gateway connection, from the reason
 * @discordjs/ws gave ("Told to reconnect by Discord", "Zombie connection",
 * "Invalid session"); `resumable` is op 9's `d` when a session was invalidated.
 */
export function describeOwnClose(reason: string, recovery: Recovery, resumable?: boolean): string {
  const next = nextStep(recovery);
  if (reason === "Told to reconnect by Discord") return `Discord asked the bot to reconnect (op 7); ${next}`;
  if (reason === "Zombie connection")
    return `Discord stopped acknowledging the bot's heartbeats (a zombie connection), so the bot closed it; ${next}`;
  if (reason === "Invalid session")
    return resumable
      ? `Discord invalidated the session (op 9, resumable, but the bot kept no session to resume); ${next}`
      : `Discord invalidated the session (op 9, not resumable); ${next}`;
  return `the bot closed the gateway connection (${reason}); ${next}`;
}

/** Discord invalidated the session but allows resuming it (op 9 with d:true): the client resumes in place. */
export const RESUMABLE_INVALID_SESSION = "Discord invalidated the session (op 9, resumable); resuming it";
