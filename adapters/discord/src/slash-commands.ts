import type { AdapterFields } from "@hub/core";
import { z } from "zod";
import { THREAD_CHANNEL_TYPES } from "./normalize.js";
import { INTERACTION_PREFIX } from "./outbound.js";

/** The hub's session commands as Discord application commands (type 1, CHAT_INPUT). */
export const SLASH_COMMANDS = [
  { name: "stop", description: "Stop the answer that is running now", type: 1 },
  { name: "new", description: "Start a new conversation (the bot forgets this one)", type: 1 },
  { name: "status", description: "Show the model, session and queue mode", type: 1 },
  {
    name: "queue",
    description: "Show or set what a message sent during an answer does",
    type: 1,
    options: [
      {
        type: 3,
        name: "mode",
        description: "steer, followup, collect or interrupt",
        required: false,
        choices: ["steer", "followup", "collect", "interrupt"].map((m) => ({ name: m, value: m })),
      },
    ],
  },
] as const;

const SLASH_NAMES: ReadonlySet<string> = new Set(SLASH_COMMANDS.map((c) => c.name));

/**
 * The answer to a slash command the hub does not have (one an older version
 * registered, still in Discord's menu), naming the commands it has; undefined
 * for the hub's own commands.
 */
export function unknownCommandAnswer(name: string): string | undefined {
  if (SLASH_NAMES.has(name)) return undefined;
  const names = SLASH_COMMANDS.map((c) => `/${c.name}`);
  return `/${name} is not a command of this bot. Its commands are ${names.slice(0, -1).join(", ")} and ${names.at(-1)}.`;
}

const UserSchema = z.looseObject({ id: z.string(), username: z.string(), global_name: z.string().nullish() });

/** The parts of an INTERACTION_CREATE (application command) the adapter reads. */
export const CommandInteractionSchema = z.looseObject({
  id: z.string(),
  application_id: z.string(),
  type: z.literal(2),
  token: z.string().min(1),
  data: z.looseObject({
    name: z.string(),
    options: z.array(z.looseObject({ name: z.string(), value: z.unknown() })).optional(),
  }),
  channel_id: z.string(),
  channel: z.looseObject({ type: z.number().int(), parent_id: z.string().nullish() }).optional(),
  guild_id: z.string().optional(),
  member: z.looseObject({ user: UserSchema, nick: z.string().nullish() }).optional(),
  user: UserSchema.optional(),
});
/** A validated application-command interaction. */
export type CommandInteraction = z.infer<typeof CommandInteractionSchema>;

/**
 * The adapter fields of a slash command: the command as text (`/queue collect`),
 * from the channel it was run in, answered through the interaction (its id in
 * `replyToMessageId`, marked). Returns undefined when the interaction has no user
 * or is in a thread whose parent is unknown.
 */
export function interactionFields(
  i: CommandInteraction,
  accountId: string,
  parentId: string | undefined,
): AdapterFields | undefined {
  const user = i.member?.user ?? i.user;
  if (!user) return undefined;
  const direct = i.guild_id === undefined;
  const isThread = !direct && THREAD_CHANNEL_TYPES.has(i.channel?.type ?? -1);
  const chatId = isThread ? (i.channel?.parent_id ?? parentId) : i.channel_id;
  if (!chatId) return undefined;
  const args = (i.data.options ?? []).map((o) => String(o.value)).join(" ");
  return {
    channel: "discord",
    accountId,
    messageId: `interaction-${i.id}`,
    chat: { type: direct ? "direct" : "group", id: chatId },
    ...(isThread ? { threadId: i.channel_id } : {}),
    sender: {
      id: user.id,
      name: i.member?.nick ?? user.global_name ?? user.username,
      username: user.username,
      isBot: false,
    },
    body: args ? `/${i.data.name} ${args}` : `/${i.data.name}`,
    wasMentioned: true,
    media: [],
    timestamp: snowflakeTime(i.id),
    replyToMessageId: `${INTERACTION_PREFIX}${i.id}`,
  };
}

/** The creation time (epoch ms) encoded in a Discord snowflake. */
export function snowflakeTime(id: string): number {
  try {
    return Number((BigInt(id) >> 22n) + 1420070400000n);
  } catch {
    return Date.now();
  }
}
