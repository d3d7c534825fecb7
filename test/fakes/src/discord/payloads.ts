import {
  type APIAttachment,
  type APIMessage,
  type APIUser,
  ChannelType,
  GatewayDispatchEvents,
  InteractionType,
  type MessageFlags,
  MessageType,
} from "discord-api-types/v10";
import type { FakeApi, FakeFileHost } from "../kit/index.js";
import type { FakeDiscordGateway } from "./gateway.js";
import type {
  DiscordCall,
  DiscordFailure,
  DiscordSentMessage,
  FakeDiscordOptions,
  FakeInteraction,
  UserMessageOptions,
} from "./types.js";

// Discord's payloads as the fake builds them (discord-api-types v10): users, the guild with its channels,
// a thread and roles (GUILD_CREATE), messages (MESSAGE_CREATE with channel_type, member and mentions) and
// application-command interactions (INTERACTION_CREATE).

const EPOCH = 1420070400000n;
let increment = 0n;
/** A Discord snowflake for now. */
export function snowflake(): string {
  increment = (increment + 1n) % 4096n;
  return String(((BigInt(Date.now()) - EPOCH) << 22n) | (1n << 17n) | increment);
}

/** A Discord user object. */
export const user = (id: string, username: string, bot = false): APIUser => ({
  id,
  username,
  discriminator: "0",
  global_name: bot ? null : username,
  avatar: null,
  ...(bot ? { bot: true } : {}),
});

/** Mentions Discord parses from a message's content. */
export function parseMentions(content: string) {
  return {
    users: [...content.matchAll(/<@!?(\d+)>/g)].map((m) => m[1] as string),
    roles: [...content.matchAll(/<@&(\d+)>/g)].map((m) => m[1] as string),
    everyone: /@(everyone|here)\b/.test(content),
  };
}

export interface State {
  o: Required<Omit<FakeDiscordOptions, "ids" | "port">>;
  bot: APIUser;
  human: APIUser;
  ids: { guild: string; botRole: string; channel: string; thread: string; dm: string; app: string };
  messages: Map<string, APIMessage>;
  sent: DiscordSentMessage[];
  /** How many times the bot edited each message (by id). */
  edits: Map<string, number>;
  /** Ids of deleted messages. */
  deleted: Set<string>;
  /** The bot's own reactions on each message (by id), as emoji. */
  reactions: Map<string, string[]>;
  /** Messages by author and nonce, with when they were made (enforce_nonce looks back `nonceWindowMs`). */
  nonces: Map<string, { message: APIMessage; at: number }>;
  typing: string[];
  typingAt: number[];
  commands: Map<string, Array<Record<string, unknown>>>;
  interactions: FakeInteraction[];
  holds: string[];
  api: FakeApi<DiscordCall, DiscordFailure>;
  gateway: FakeDiscordGateway;
  /** The attachments' CDN, served by the same server. */
  files: FakeFileHost;
  cdnUrl: () => string;
}

export function channelTypeOf(s: State, channelId: string): ChannelType | undefined {
  if (channelId === s.ids.channel) return ChannelType.GuildText;
  if (channelId === s.ids.thread) return ChannelType.PublicThread;
  if (channelId === s.ids.dm) return ChannelType.DM;
  return undefined;
}

// The id of a channel's newest message (deleted ones too, as Discord keeps it), or null when it has none.
function lastMessageId(s: State, channelId: string): string | null {
  let last: string | null = null;
  for (const m of s.messages.values())
    if (m.channel_id === channelId && (last === null || BigInt(m.id) > BigInt(last))) last = m.id;
  return last;
}

export function guildChannels(s: State) {
  return {
    channels: [
      {
        id: s.ids.channel,
        type: ChannelType.GuildText,
        guild_id: s.ids.guild,
        name: "general",
        position: 0,
        permission_overwrites: [],
        nsfw: false,
        parent_id: null,
        topic: null,
        last_message_id: lastMessageId(s, s.ids.channel),
        rate_limit_per_user: 0,
      },
    ],
    threads: [
      {
        id: s.ids.thread,
        type: ChannelType.PublicThread,
        guild_id: s.ids.guild,
        parent_id: s.ids.channel,
        owner_id: s.human.id,
        name: "release planning",
        last_message_id: lastMessageId(s, s.ids.thread),
        rate_limit_per_user: 0,
        message_count: 0,
        member_count: 1,
        thread_metadata: {
          archived: false,
          auto_archive_duration: 1440,
          archive_timestamp: new Date().toISOString(),
          locked: false,
        },
      },
    ],
  };
}

export function guildCreate(s: State): unknown {
  const role = (id: string, name: string, managed: boolean) => ({
    id,
    name,
    color: 0,
    colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
    hoist: false,
    icon: null,
    unicode_emoji: null,
    position: managed ? 1 : 0,
    permissions: "3072",
    managed,
    mentionable: true,
    flags: 0,
    ...(managed ? { tags: { bot_id: s.bot.id } } : {}),
  });
  const member = (u: APIUser, roles: string[]) => ({
    user: u,
    roles,
    joined_at: new Date(0).toISOString(),
    deaf: false,
    mute: false,
    flags: 0,
  });
  return {
    id: s.ids.guild,
    name: "Hub Test Server",
    icon: null,
    owner_id: s.human.id,
    afk_channel_id: null,
    afk_timeout: 300,
    verification_level: 0,
    default_message_notifications: 0,
    explicit_content_filter: 0,
    roles: [role(s.ids.guild, "@everyone", false), role(s.ids.botRole, s.bot.username, true)],
    emojis: [],
    stickers: [],
    features: [],
    mfa_level: 0,
    system_channel_id: null,
    system_channel_flags: 0,
    rules_channel_id: null,
    vanity_url_code: null,
    description: null,
    banner: null,
    premium_tier: 0,
    preferred_locale: "en-US",
    public_updates_channel_id: null,
    nsfw_level: 0,
    premium_progress_bar_enabled: false,
    safety_alerts_channel_id: null,
    application_id: null,
    joined_at: new Date(0).toISOString(),
    large: false,
    unavailable: false,
    member_count: 2,
    voice_states: [],
    members: [member(s.bot, [s.ids.botRole]), member(s.human, [])],
    presences: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
    ...guildChannels(s),
  };
}

export function messageOf(
  s: State,
  channelId: string,
  author: APIUser,
  content: string,
  extra: Partial<APIMessage> = {},
): APIMessage {
  const mentions = parseMentions(content);
  const known = [s.bot, s.human];
  const message: APIMessage = {
    id: snowflake(),
    channel_id: channelId,
    author,
    content,
    timestamp: new Date().toISOString(),
    edited_timestamp: null,
    tts: false,
    mention_everyone: mentions.everyone,
    mentions: known.filter((u) => mentions.users.includes(u.id)),
    mention_roles: mentions.roles,
    attachments: [],
    embeds: [],
    pinned: false,
    type: MessageType.Default,
    flags: 0 as MessageFlags,
    components: [],
    ...extra,
  };
  s.messages.set(message.id, message);
  return message;
}

/** The MESSAGE_CREATE dispatch data of a message: guild fields for guild channels, `channel_type` always. */
export function messageCreateData(s: State, message: APIMessage): Record<string, unknown> {
  const type = channelTypeOf(s, message.channel_id);
  const inGuild = type !== ChannelType.DM && type !== undefined;
  return {
    ...message,
    ...(type !== undefined ? { channel_type: type } : {}),
    ...(inGuild
      ? {
          guild_id: s.ids.guild,
          member: {
            roles: message.author.id === s.bot.id ? [s.ids.botRole] : [],
            joined_at: new Date(0).toISOString(),
            deaf: false,
            mute: false,
            flags: 0,
          },
        }
      : {}),
  };
}

// Attachments live on the fake's CDN (`<server>/attachments/...`), signed like Discord's (ex, is, hm).
function attachmentOf(
  s: State,
  channelId: string,
  a: NonNullable<UserMessageOptions["attachments"]>[number],
): APIAttachment {
  const id = snowflake();
  const { data, chunked, ...fields } = a;
  const path = `/attachments/${channelId}/${id}/${encodeURIComponent(a.filename)}`;
  const expires = Math.floor(Date.now() / 1000) + 86_400;
  const query = `?ex=${expires.toString(16)}&is=${Math.floor(Date.now() / 1000).toString(16)}&hm=${id}`;
  if (data !== undefined)
    s.files.add(path, {
      name: a.filename,
      mime: a.content_type ?? "application/octet-stream",
      bytes: data,
      chunked,
    });
  const url = `${s.cdnUrl()}${path}${query}`;
  return { id, ...fields, url, proxy_url: url };
}

export function buildUserMessage(s: State, o: UserMessageOptions): APIMessage {
  const prefix = [o.mentionBot ? `<@${s.bot.id}>` : "", o.mentionBotRole ? `<@&${s.ids.botRole}>` : ""]
    .filter(Boolean)
    .join(" ");
  const content = prefix ? `${prefix} ${o.content}` : o.content;
  const referenced = o.replyTo ? s.messages.get(o.replyTo) : undefined;
  const inGuild = channelTypeOf(s, o.channelId) !== ChannelType.DM;
  const message = messageOf(s, o.channelId, o.author ?? s.human, content, {
    type: o.type ?? (o.replyTo ? MessageType.Reply : MessageType.Default),
    ...(o.webhook ? { webhook_id: snowflake() } : {}),
    ...(o.replyTo
      ? {
          message_reference: {
            type: 0,
            message_id: o.replyTo,
            channel_id: o.channelId,
            ...(inGuild ? { guild_id: s.ids.guild } : {}),
          },
          referenced_message: referenced ?? null,
        }
      : {}),
    attachments: (o.attachments ?? []).map((a) => attachmentOf(s, o.channelId, a)),
  });
  return message;
}

export function userMessage(s: State, o: UserMessageOptions): APIMessage {
  const message = buildUserMessage(s, o);
  s.gateway.dispatch(GatewayDispatchEvents.MessageCreate, messageCreateData(s, message));
  return message;
}

export function slashCommand(
  s: State,
  name: string,
  options: { channelId?: string; args?: Array<{ name: string; value: string }>; user?: APIUser } = {},
): FakeInteraction {
  const who = options.user ?? s.human;
  const channelId = options.channelId ?? s.ids.channel;
  const inGuild = channelTypeOf(s, channelId) !== ChannelType.DM;
  const i: FakeInteraction = {
    id: snowflake(),
    token: `aW50ZXJhY3Rpb246${snowflake()}${"x".repeat(120)}`,
    name,
    channelId,
    createdAt: Date.now(),
    followups: [],
  };
  s.interactions.push(i);
  const registered = [...s.commands.values()].flat().find((c) => c.name === name);
  s.gateway.dispatch(GatewayDispatchEvents.InteractionCreate, {
    id: i.id,
    application_id: s.ids.app,
    type: InteractionType.ApplicationCommand,
    data: {
      id: String(registered?.id ?? snowflake()),
      name,
      type: 1,
      ...(options.args ? { options: options.args.map((a) => ({ ...a, type: 3 })) } : {}),
    },
    channel_id: channelId,
    channel: {
      id: channelId,
      type: channelTypeOf(s, channelId),
      ...(channelId === s.ids.thread ? { parent_id: s.ids.channel, guild_id: s.ids.guild } : {}),
    },
    ...(inGuild
      ? {
          guild_id: s.ids.guild,
          guild: { id: s.ids.guild, locale: "en-US", features: [] },
          guild_locale: "en-US",
          member: {
            user: who,
            roles: [],
            permissions: "2248473465835073",
            joined_at: new Date(0).toISOString(),
            deaf: false,
            mute: false,
            flags: 0,
          },
        }
      : { user: who }),
    token: i.token,
    version: 1,
    app_permissions: "2248473465835073",
    locale: "en-US",
    entitlements: [],
    authorizing_integration_owners: { "0": s.ids.guild },
    context: inGuild ? 0 : 1,
    attachment_size_limit: 10_485_760,
  });
  return i;
}
