import { describeError, type ReplyTarget } from "@hub/core";
import type { WebClient } from "@slack/web-api";

// Live previews and reactions on Slack's Web API: chat.update, chat.delete, reactions.add/remove.

/** Reaction names of the emoji a config is likely to give as characters (Slack reacts by name). */
const EMOJI_NAMES: Record<string, string> = {
  "👀": "eyes",
  "👍": "+1",
  "✅": "white_check_mark",
  "🤔": "thinking_face",
  "⏳": "hourglass_flowing_sand",
  "🔥": "fire",
  "❤️": "heart",
  "🙏": "pray",
  "✍️": "writing_hand",
};

/** The Slack reaction name of a configured emoji: `eyes`, `:eyes:` or "👀" all give `eyes`. */
export function reactionName(emoji: string): string {
  return EMOJI_NAMES[emoji] ?? emoji.replace(/^:|:$/g, "");
}

/** The `ts` of a message id (an edit handled as new carries `<ts>:edit:<mark>`). */
export const tsOf = (messageId: string): string => messageId.split(":")[0] ?? messageId;

/** Replaces the text of a message the bot posted (chat.update), already rendered to mrkdwn. */
export async function updateText(
  client: WebClient,
  target: ReplyTarget,
  ts: string,
  text: string,
): Promise<void> {
  await client.chat.update({ channel: target.chatId, ts, text });
}

/** Deletes a message the bot posted (chat.delete); one already gone is success. */
export async function deletePost(client: WebClient, target: ReplyTarget, ts: string): Promise<void> {
  try {
    await client.chat.delete({ channel: target.chatId, ts });
  } catch (error) {
    if (!describeError(error).includes("message_not_found")) throw error;
  }
}

/**
 * Adds or removes the bot's reaction. A reaction already there (someone's click of the same emoji does
 * not count: Slack tracks the bot's own) or already gone is success.
 */
export async function setReaction(
  client: WebClient,
  target: ReplyTarget,
  messageId: string,
  name: string,
  on: boolean,
): Promise<void> {
  const params = { channel: target.chatId, timestamp: tsOf(messageId), name };
  try {
    await (on ? client.reactions.add(params) : client.reactions.remove(params));
  } catch (error) {
    const code = describeError(error);
    if (!(code.includes("already_reacted") || code.includes("no_reaction"))) throw error;
  }
}
