import type { APIMessage } from "discord-api-types/v10";
import type { State } from "./payloads.js";
import { type Answer, json } from "./rest.js";

// Message edits, deletes and the bot's reactions, as Discord's REST API answers them:
// PATCH/DELETE /channels/{c}/messages/{m}, PUT/DELETE /channels/{c}/messages/{m}/reactions/{emoji}/@me.

const unknownMessage = () => json(404, { message: "Unknown Message", code: 10008 });

/** The message `id` in channel `channelId`, if the fake knows it there. */
function messageIn(s: State, channelId: string, id: string): APIMessage | undefined {
  const message = s.messages.get(id);
  return message && message.channel_id === channelId ? message : undefined;
}

/** PATCH a message: only the author may edit; the content is checked like a send. */
function editMessage(s: State, channelId: string, id: string, body: Record<string, unknown>): Answer {
  const message = messageIn(s, channelId, id);
  if (!message || s.deleted.has(id)) return unknownMessage();
  if (message.author.id !== s.bot.id)
    return json(403, { message: "Cannot edit a message authored by another user", code: 50005 });
  if (typeof body.content === "string") {
    if (body.content.length > 2000)
      return json(400, {
        message: "Invalid Form Body",
        code: 50035,
        errors: {
          content: {
            _errors: [{ code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length." }],
          },
        },
      });
    message.content = body.content;
  }
  message.edited_timestamp = new Date().toISOString();
  s.edits.set(id, (s.edits.get(id) ?? 0) + 1);
  return json(200, message);
}

function reaction(s: State, method: string, channelId: string, id: string, emoji: string): Answer {
  const message = messageIn(s, channelId, id);
  if (!message || s.deleted.has(id)) return unknownMessage();
  if (emoji === "" || emoji.includes(" ")) return json(400, { message: "Unknown Emoji", code: 10014 });
  const own = s.reactions.get(id) ?? [];
  const rest = own.filter((e) => e !== emoji);
  s.reactions.set(id, method === "PUT" ? [...rest, emoji] : rest);
  return json(204);
}

/** Answers the message edit, delete and own-reaction routes; undefined for any other route. */
export function liveRoute(
  s: State,
  method: string,
  parts: string[],
  body: Record<string, unknown>,
): Answer | undefined {
  // parts: channels, {c}, messages, {m}[, reactions, {emoji}, @me]
  if (parts[0] !== "channels" || parts[2] !== "messages" || !parts[1] || !parts[3]) return undefined;
  const [, channelId, , id] = parts as [string, string, string, string];
  if (parts.length === 4 && method === "PATCH") return editMessage(s, channelId, id, body);
  if (parts.length === 4 && method === "DELETE") {
    if (!messageIn(s, channelId, id) || s.deleted.has(id)) return unknownMessage();
    s.deleted.add(id);
    return json(204);
  }
  if (
    parts.length === 7 &&
    parts[4] === "reactions" &&
    parts[6] === "@me" &&
    (method === "PUT" || method === "DELETE")
  )
    return reaction(s, method, channelId, id, parts[5] ?? "");
  return undefined;
}
