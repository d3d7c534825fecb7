import { ChannelRefusedError, keyOrVariable } from "@hub/core";
import { GrammyError, HttpError } from "grammy";

// The Bot API puts the token in the URL path, and fetch errors quote the URL. The slash after a segment is
// only looked at, not taken: an apiRoot whose own path starts with "bot" (`/botapi/bot<token>/getMe`)
// leaves it for the token's segment.
const TOKEN_IN_URL = /\/bot[^/\s]+(?=\/)/g;
// A token anywhere else (a URL cut before its method, a query): Telegram's shape, `<bot id>:<secret>`.
const TOKEN_SHAPED = /(?<!\d)\d{3,}:[A-Za-z0-9_-]{20,}/g;

/** A one-line description of a Telegram failure; never the token (it is cut out of quoted URLs). */
export function describeTelegramError(error: unknown): string {
  let text: string;
  if (error instanceof GrammyError) text = `${error.error_code} ${error.description}`;
  else if (error instanceof HttpError)
    text = `network error: ${String(error.error instanceof Error ? error.error.message : error.error)}`;
  else text = error instanceof Error ? error.message : String(error);
  return text.replace(TOKEN_IN_URL, "/bot<token>").replace(TOKEN_SHAPED, "<token>");
}

/** Whether Telegram refused the token itself (401 Unauthorized, or 404 for a malformed one). */
export function isTokenRefused(error: unknown): boolean {
  return error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404);
}

/** A definitive refusal of the token as one clear line, or a transient error (retried) that says what failed. */
export function classifyStartError(error: unknown, configPath: string): Error {
  if (!isTokenRefused(error))
    // No `cause`: the network error's own message quotes the URL, token included.
    return new Error(`Telegram could not be reached (${describeTelegramError(error)})`);
  // As the missing token's line: TELEGRAM_BOT_TOKEN may be where it came from (the default account's, or
  // the shared key an account without its own inherits).
  return new ChannelRefusedError(
    "telegram_token_refused",
    `Telegram did not accept the bot token (${describeTelegramError(error)}); check ${keyOrVariable(configPath, "botToken", "TELEGRAM_BOT_TOKEN")} (from @BotFather).`,
    { cause: error },
  );
}

/** Whether Telegram refused our HTML (`can't parse entities`): the text is then resent as plain text. */
export function isHtmlParseError(error: unknown): boolean {
  return (
    error instanceof GrammyError &&
    error.error_code === 400 &&
    /can't parse entities/i.test(error.description)
  );
}
