import type { OutboundSegment } from "@hub/core";
import { type Api, GrammyError } from "grammy";
import type { ReactionTypeEmoji } from "grammy/types";
import { grammySignal } from "./grammy-signal.js";
import { platformMessageId } from "./normalize.js";
import { plainTextFallback, renderTelegramHtml } from "./render.js";

// Live previews and reactions on the Bot API: editMessageText, deleteMessage, setMessageReaction.

const isBadRequest = (error: unknown, pattern: RegExp): boolean =>
  error instanceof GrammyError && error.error_code === 400 && pattern.test(error.description);

/**
 * Replaces a message's text (rendered like a send). Telegram answers 400 "message is not modified" to
 * an edit that changes nothing: the message already shows the text, which is success.
 */
export async function editText(
  api: Api,
  chatId: number | string,
  messageId: string,
  segment: OutboundSegment,
  signal?: AbortSignal,
): Promise<void> {
  const s = grammySignal(signal);
  try {
    try {
      await api.editMessageText(
        chatId,
        Number(messageId),
        renderTelegramHtml(segment.text),
        { parse_mode: "HTML" },
        s,
      );
    } catch (error) {
      if (!isBadRequest(error, /can't parse entities/i)) throw error;
      await api.editMessageText(chatId, Number(messageId), plainTextFallback(segment.text), {}, s);
    }
  } catch (error) {
    if (isBadRequest(error, /message is not modified/i)) return;
    throw error;
  }
}

/** Deletes a message the bot sent; one already gone (400 "message to delete not found") is success. */
export async function deleteMessage(api: Api, chatId: number | string, messageId: string): Promise<void> {
  try {
    await api.deleteMessage(chatId, Number(messageId));
  } catch (error) {
    if (isBadRequest(error, /message to delete not found/i)) return;
    throw error;
  }
}

/** Sets the bot's reaction on a message (`emoji` from Telegram's reaction set), or clears it (`null`). */
export async function setReaction(
  api: Api,
  chatId: number | string,
  messageId: string,
  emoji: string | null,
): Promise<void> {
  // Telegram lists its reaction emoji without the emoji presentation selector (U+FE0F): "❤", not "❤️".
  const reaction =
    emoji === null ? [] : [{ type: "emoji", emoji: emoji.replaceAll("\uFE0F", "") } as ReactionTypeEmoji];
  await api.setMessageReaction(chatId, platformMessageId(messageId), reaction);
}
