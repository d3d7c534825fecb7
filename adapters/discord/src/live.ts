import type { OutboundSegment, ReplyTarget } from "@hub/core";
import { DiscordAPIError, type REST, Routes } from "discord.js";
import { channelOf } from "./outbound.js";

// Live previews and reactions on Discord's REST API: PATCH/DELETE a message, PUT/DELETE the bot's reaction.

/** Discord's "Unknown Message": the message (or the reaction's message) is gone. */
const UNKNOWN_MESSAGE = 10008;

const isUnknownMessage = (error: unknown) =>
  error instanceof DiscordAPIError && error.code === UNKNOWN_MESSAGE;

/** Replaces a message's content (PATCH /channels/{c}/messages/{m}); pings nobody, like a send. */
export async function editMessage(
  rest: REST,
  messageId: string,
  segment: OutboundSegment,
  target: ReplyTarget,
  signal?: AbortSignal,
): Promise<void> {
  await rest.patch(Routes.channelMessage(channelOf(target), messageId), {
    body: { content: segment.text, allowed_mentions: { parse: [] } },
    ...(signal ? { signal } : {}),
  });
}

/** Deletes a message the bot sent; one already gone is success. */
export async function deleteMessage(rest: REST, target: ReplyTarget, messageId: string): Promise<void> {
  try {
    await rest.delete(Routes.channelMessage(channelOf(target), messageId));
  } catch (error) {
    if (!isUnknownMessage(error)) throw error;
  }
}

/**
 * Adds (PUT .../reactions/{emoji}/@me) or removes (DELETE) the bot's reaction. Removing needs the emoji
 * that was added: the last one set on the message is remembered by the caller.
 */
export async function setOwnReaction(
  rest: REST,
  target: ReplyTarget,
  messageId: string,
  emoji: string,
  on: boolean,
): Promise<void> {
  const route = Routes.channelMessageOwnReaction(channelOf(target), messageId, encodeURIComponent(emoji));
  try {
    await (on ? rest.put(route) : rest.delete(route));
  } catch (error) {
    if (!(isUnknownMessage(error) && !on)) throw error;
  }
}
