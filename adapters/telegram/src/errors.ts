import { ChannelRefusedError } from "@hub/core";
import { GrammyError, HttpError } from "grammy";

/** A one-line description of a Telegram failure; never the token (grammY's errors carry the method, not the URL). */
export function describeTelegramError(error: unknown): string {
  if (error instanceof GrammyError) return `${error.error_code} ${error.description}`;
  if (error instanceof HttpError)
    return `network error: ${String(error.error instanceof Error ? error.error.message : error.error)}`;
  return error instanceof Error ? error.message : String(error);
}

/** Whether Telegram refused the token itself (401 Unauthorized, or 404 for a malformed one). */
export function isTokenRefused(error: unknown): boolean {
  return error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404);
}

/** A definitive refusal of the token as one clear line, or a transient error (retried) that says what failed. */
export function classifyStartError(error: unknown, configPath: string): Error {
  if (!isTokenRefused(error))
    return new Error(`Telegram could not be reached (${describeTelegramError(error)})`, { cause: error });
  return new ChannelRefusedError(
    "telegram_token_refused",
    `Telegram did not accept the bot token (${describeTelegramError(error)}); check ${configPath}.botToken (from @BotFather).`,
    { cause: error },
  );
}
