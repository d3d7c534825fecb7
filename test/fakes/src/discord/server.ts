import type { IncomingMessage, ServerResponse } from "node:http";
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
import { FakeApi, type RecordedCall, readBody, startHttpServer } from "../kit/index.js";
import { FakeDiscordGateway } from "./gateway.js";

// A local fake of Discord for discord.js (https://discord.com/developers/docs): the REST API under
// `/api/v10` (GET /gateway/bot, POST /channels/:id/messages with nonce + enforce_nonce de-duplication
// and allowed_mentions, typing, application commands, interaction callbacks and their webhook edits,
// 429s with Retry-After + X-RateLimit-* headers and a `retry_after` body) and the gateway WebSocket at
// `/gateway` on the same server (see discord-gateway.ts). Payloads follow discord-api-types v10.

/** Options of `startFakeDiscord`. */
export interface FakeDiscordOptions {
  token?: string;
  /** Heartbeat interval the gateway's HELLO asks for (ms; Discord uses ~41 s). */
  heartbeatIntervalMs?: number;
  /** Whether the app may use the privileged Message Content intent (default true). */
  messageContentAllowed?: boolean;
  /** How long an interaction may wait for its first response (ms; Discord: 3 s). */
  interactionResponseMs?: number;
  /** Listen on this port (default: any free one), e.g. one an adapter was pointed at while the fake was down. */
  port?: number;
  /** False: the gateway accepts connections but never says HELLO (default true). */
  hello?: boolean;
  /** Fixed ids (snowflakes) instead of generated ones, e.g. when a test names them before the fake starts. */
  ids?: { user?: string; channel?: string; thread?: string; dm?: string; guild?: string };
}

/** One message the bot created through REST (the JSON body as received, and the message Discord made). */
export interface DiscordSentMessage {
  channelId: string;
  body: Record<string, unknown>;
  message: APIMessage;
  /** Who was really pinged, after `allowed_mentions` was applied. */
  pinged: { everyone: boolean; users: string[]; roles: string[] };
  at: number;
}

/**
 * One REST request the fake received with a valid token. `method` is the HTTP
 * method and route template (`POST /channels/:id/messages`), the kit's key for
 * `failNext`, `callsOf` and `waitForCall`; `params` is the JSON body.
 */
export interface DiscordCall extends RecordedCall {
  /** The path after `/api/v10`, e.g. `/channels/123/messages`. */
  route: string;
  body: unknown;
  status: number;
}

/** An interaction the fake created, with how the bot answered it. */
export interface FakeInteraction {
  id: string;
  token: string;
  name: string;
  channelId: string;
  createdAt: number;
  /** When the first callback (e.g. type 5, deferred) arrived. */
  respondedAt?: number;
  callbackType?: number;
  /** The content of the original response (set by a type-4 callback or PATCH @original). */
  content?: string;
  followups: string[];
}

/** A scripted failure for the next request of a route. */
export interface DiscordFailure {
  status: 429 | 500 | 403 | 404;
  /** For 429: seconds (float) until the bucket resets. */
  retryAfter?: number;
  /** For 429: a global rate limit (X-RateLimit-Global, scope "global"). */
  global?: boolean;
}

/** A running fake Discord. */
export interface FakeDiscord {
  /** Pass as discord.js `rest.api`, e.g. `http://127.0.0.1:PORT/api`. */
  readonly restApi: string;
  readonly token: string;
  readonly bot: APIUser;
  readonly applicationId: string;
  readonly guildId: string;
  /** The bot's own role in the guild (its managed integration role). */
  readonly botRoleId: string;
  /** A guild text channel, and a public thread in it. */
  readonly channelId: string;
  readonly threadId: string;
  /** A human user, and the DM channel between them and the bot. */
  readonly user: APIUser;
  readonly dmChannelId: string;
  readonly gateway: FakeDiscordGateway;
  /** Every REST call, failed ones too (the kit's recorder: `callsOf`, `waitForCall`, `failNext`). */
  readonly api: FakeApi<DiscordCall, DiscordFailure>;
  readonly calls: DiscordCall[];
  /** Messages the bot created, in creation order (optionally in one channel). */
  sent(channelId?: string): DiscordSentMessage[];
  /** Typing indicators the bot triggered, by channel id. */
  readonly typing: string[];
  /** Application commands registered, by scope (`global` or the guild id). */
  readonly commands: Map<string, Array<Record<string, unknown>>>;
  readonly interactions: FakeInteraction[];
  /** A user writes in a channel (a MESSAGE_CREATE on the gateway); returns the message. */
  userMessage(options: UserMessageOptions): APIMessage;
  /** The MESSAGE_CREATE dispatch data of a user's message, without sending it (e.g. to mutate it first). */
  messageCreatePayload(options: UserMessageOptions): Record<string, unknown>;
  /** Dispatches a MESSAGE_CREATE for an existing message again (a replay). */
  redeliver(message: APIMessage): void;
  /** A user runs a slash command (an INTERACTION_CREATE on the gateway). */
  slashCommand(
    name: string,
    options?: { channelId?: string; args?: Array<{ name: string; value: string }>; user?: APIUser },
  ): FakeInteraction;
  /** The next `times` requests of a route template (e.g. `POST /channels/:id/messages`) fail. */
  failNext(route: string, failure: DiscordFailure, times?: number): void;
  /**
   * The next request of a route template is carried out (a message is created) but never answered,
   * as when the bot's process dies between Discord's success and reading the answer.
   */
  holdNextResponse(route: string): void;
  close(): Promise<void>;
}

/** What a user's message looks like. */
export interface UserMessageOptions {
  channelId: string;
  content: string;
  /** Author: the fake's human user by default. */
  author?: APIUser;
  /** Prefix the content with a mention of the bot user (`<@id>`). */
  mentionBot?: boolean;
  /** Prefix the content with a mention of the bot's role (`<@&id>`). */
  mentionBotRole?: boolean;
  /** Reply to this message (a `message_reference`, with `referenced_message` filled in). */
  replyTo?: string;
  attachments?: Array<Pick<APIAttachment, "filename" | "size"> & { content_type?: string }>;
  /** Sent through a webhook (`webhook_id` set). */
  webhook?: boolean;
  /** Message type (default 0, DEFAULT; 19 for replies); e.g. 7 for a system "member joined". */
  type?: MessageType;
}

const EPOCH = 1420070400000n;
let increment = 0n;
/** A Discord snowflake for now. */
export function snowflake(): string {
  increment = (increment + 1n) % 4096n;
  return String(((BigInt(Date.now()) - EPOCH) << 22n) | (1n << 17n) | increment);
}

const user = (id: string, username: string, bot = false): APIUser => ({
  id,
  username,
  discriminator: "0",
  global_name: bot ? null : username,
  avatar: null,
  ...(bot ? { bot: true } : {}),
});

/** Mentions Discord parses from a message's content. */
function parseMentions(content: string) {
  return {
    users: [...content.matchAll(/<@!?(\d+)>/g)].map((m) => m[1] as string),
    roles: [...content.matchAll(/<@&(\d+)>/g)].map((m) => m[1] as string),
    everyone: /@(everyone|here)\b/.test(content),
  };
}

interface State {
  o: Required<Omit<FakeDiscordOptions, "ids" | "port">>;
  bot: APIUser;
  human: APIUser;
  ids: { guild: string; botRole: string; channel: string; thread: string; dm: string; app: string };
  messages: Map<string, APIMessage>;
  sent: DiscordSentMessage[];
  nonces: Map<string, APIMessage>;
  typing: string[];
  commands: Map<string, Array<Record<string, unknown>>>;
  interactions: FakeInteraction[];
  holds: string[];
  api: FakeApi<DiscordCall, DiscordFailure>;
  gateway: FakeDiscordGateway;
}

function channelTypeOf(s: State, channelId: string): ChannelType | undefined {
  if (channelId === s.ids.channel) return ChannelType.GuildText;
  if (channelId === s.ids.thread) return ChannelType.PublicThread;
  if (channelId === s.ids.dm) return ChannelType.DM;
  return undefined;
}

function guildChannels(s: State) {
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
        last_message_id: null,
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
        last_message_id: null,
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

/** GET /channels/:id: the channel object (guild channels and threads as in GUILD_CREATE, the DM with its recipient). */
function channelOf(s: State, id: string): Answer {
  const { channels, threads } = guildChannels(s);
  const found = [...channels, ...threads].find((c) => c.id === id);
  if (found) return json(200, found);
  if (id === s.ids.dm)
    return json(200, { id, type: ChannelType.DM, last_message_id: null, flags: 0, recipients: [s.human] });
  return json(404, { message: "Unknown Channel", code: 10003 });
}

function guildCreate(s: State): unknown {
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

function messageOf(
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
function messageCreateData(s: State, message: APIMessage): Record<string, unknown> {
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

function buildUserMessage(s: State, o: UserMessageOptions): APIMessage {
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
    attachments: (o.attachments ?? []).map((a) => {
      const id = snowflake();
      const url = `https://cdn.discordapp.com/attachments/${o.channelId}/${id}/${a.filename}`;
      return { id, ...a, url, proxy_url: url.replace("cdn.discordapp.com", "media.discordapp.net") };
    }),
  });
  return message;
}

function userMessage(s: State, o: UserMessageOptions): APIMessage {
  const message = buildUserMessage(s, o);
  s.gateway.dispatch(GatewayDispatchEvents.MessageCreate, messageCreateData(s, message));
  return message;
}

// ---------------------------------------------------------------------------------------------
// REST

interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const json = (status: number, body?: unknown): Answer => ({
  status,
  ...(body === undefined ? {} : { body }),
});
const invalidForm = (field: string, code: string, message: string): Answer =>
  json(400, {
    message: "Invalid Form Body",
    code: 50035,
    errors: { [field]: { _errors: [{ code, message }] } },
  });

/** Who a message really pings, given its content and `allowed_mentions` (Discord's default parses all). */
function pingsOf(content: string, allowed: unknown): DiscordSentMessage["pinged"] {
  const m = parseMentions(content);
  const a = (allowed ?? { parse: ["users", "roles", "everyone"] }) as {
    parse?: string[];
    users?: string[];
    roles?: string[];
  };
  const parse = a.parse ?? [];
  return {
    everyone: parse.includes("everyone") && m.everyone,
    users: parse.includes("users") ? m.users : m.users.filter((id) => a.users?.includes(id)),
    roles: parse.includes("roles") ? m.roles : m.roles.filter((id) => a.roles?.includes(id)),
  };
}

function createMessage(s: State, channelId: string, body: Record<string, unknown>): Answer {
  if (channelTypeOf(s, channelId) === undefined)
    return json(404, { message: "Unknown Channel", code: 10003 });
  const content = typeof body.content === "string" ? body.content : "";
  if (content.length > 2000)
    return invalidForm("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
  if (content.trim() === "") return json(400, { message: "Cannot send an empty message", code: 50006 });
  const nonce = body.nonce;
  if (
    nonce !== undefined &&
    !(typeof nonce === "number" || (typeof nonce === "string" && nonce.length <= 25))
  )
    return invalidForm("nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.");
  // enforce_nonce: a nonce this author used in the last few minutes returns the message it made.
  const nonceKey = `${s.bot.id}:${String(nonce)}`;
  const earlier = nonce !== undefined && body.enforce_nonce === true ? s.nonces.get(nonceKey) : undefined;
  if (earlier) return json(200, earlier);
  const ref = body.message_reference as { message_id?: string; fail_if_not_exists?: boolean } | undefined;
  const target = ref?.message_id ? s.messages.get(ref.message_id) : undefined;
  if (ref?.message_id && !target && ref.fail_if_not_exists !== false)
    return invalidForm("message_reference", "REPLIES_UNKNOWN_MESSAGE", "Unknown message");
  const message = messageOf(s, channelId, s.bot, content, {
    ...(nonce !== undefined ? { nonce: nonce as string } : {}),
    ...(target
      ? {
          type: MessageType.Reply,
          message_reference: { type: 0, message_id: target.id, channel_id: channelId },
          referenced_message: target,
        }
      : {}),
  });
  if (nonce !== undefined && body.enforce_nonce === true) s.nonces.set(nonceKey, message);
  s.sent.push({ channelId, body, message, pinged: pingsOf(content, body.allowed_mentions), at: Date.now() });
  // Discord echoes the bot's own message on the gateway (the adapter must ignore it).
  s.gateway.dispatch(GatewayDispatchEvents.MessageCreate, messageCreateData(s, message));
  return json(200, message);
}

function interactionCallback(s: State, id: string, token: string, body: Record<string, unknown>): Answer {
  const i = s.interactions.find((x) => x.id === id && x.token === token);
  if (!i || Date.now() - i.createdAt > s.o.interactionResponseMs)
    return json(404, { message: "Unknown interaction", code: 10062 });
  if (i.respondedAt !== undefined)
    return json(400, { message: "Interaction has already been acknowledged.", code: 40060 });
  i.respondedAt = Date.now();
  i.callbackType = Number(body.type);
  const data = body.data as { content?: string } | undefined;
  if (i.callbackType === 4 && data?.content) i.content = data.content;
  return json(204);
}

function webhookRoute(s: State, method: string, parts: string[], body: Record<string, unknown>): Answer {
  // /webhooks/{app}/{token}[/messages/@original]
  const i = s.interactions.find((x) => x.token === parts[2]);
  if (parts[1] !== s.ids.app || !i || i.respondedAt === undefined)
    return json(404, { message: "Unknown Webhook", code: 10015 });
  const content = typeof body.content === "string" ? body.content : "";
  if (content.length > 2000)
    return invalidForm("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
  if (method === "GET" && parts[3] === "messages" && parts[4] === "@original") {
    // A deferred response is an empty message with the LOADING flag until it is edited.
    const loading = i.content === undefined;
    const original = messageOf(s, i.channelId, s.bot, i.content ?? "", { application_id: s.ids.app });
    return json(200, { ...original, flags: loading ? 128 : 0 });
  }
  if (method === "PATCH" && parts[3] === "messages" && parts[4] === "@original") {
    i.content = content;
    return json(200, messageOf(s, i.channelId, s.bot, content, { application_id: s.ids.app }));
  }
  if (method === "POST" && parts.length === 3) {
    i.followups.push(content);
    return json(200, messageOf(s, i.channelId, s.bot, content, { application_id: s.ids.app }));
  }
  return json(404, { message: "404: Not Found", code: 0 });
}

function putCommands(s: State, scope: string, body: unknown): Answer {
  if (!Array.isArray(body)) return invalidForm("_errors", "BASE_TYPE_ARRAY", "Must be an array.");
  const list = body.map((c) => ({
    id: snowflake(),
    application_id: s.ids.app,
    version: snowflake(),
    type: 1,
    ...(scope === "global" ? {} : { guild_id: scope }),
    ...(c as Record<string, unknown>),
  }));
  s.commands.set(scope, list);
  return json(200, list);
}

function route(s: State, method: string, path: string, body: unknown): Answer {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const b = (body ?? {}) as Record<string, unknown>;
  if (method === "GET" && path === "/gateway/bot")
    return json(200, {
      url: s.gateway.url(),
      shards: 1,
      session_start_limit: { total: 1000, remaining: 999, reset_after: 86_400_000, max_concurrency: 1 },
    });
  if (method === "GET" && path === "/gateway") return json(200, { url: s.gateway.url() });
  if (method === "GET" && path === "/users/@me") return json(200, s.bot);
  if (parts[0] === "channels" && parts[1]) {
    if (method === "POST" && parts[2] === "messages" && parts.length === 3)
      return createMessage(s, parts[1], b);
    if (method === "GET" && parts.length === 2) return channelOf(s, parts[1]);
    if (method === "POST" && parts[2] === "typing") {
      if (channelTypeOf(s, parts[1]) === undefined)
        return json(404, { message: "Unknown Channel", code: 10003 });
      s.typing.push(parts[1]);
      return json(204);
    }
  }
  if (method === "PUT" && parts[0] === "applications" && parts[1] === s.ids.app) {
    if (parts[2] === "commands") return putCommands(s, "global", body);
    if (parts[2] === "guilds" && parts[3] && parts[4] === "commands") return putCommands(s, parts[3], body);
  }
  if (method === "POST" && parts[0] === "interactions" && parts[3] === "callback")
    return interactionCallback(s, parts[1] ?? "", parts[2] ?? "", b);
  if (parts[0] === "webhooks") return webhookRoute(s, method, parts, b);
  return json(404, { message: "404: Not Found", code: 0 });
}

/** The X-RateLimit-* headers of a route, and a 429 answer when a failure is scripted. */
function rateLimitAnswer(failure: DiscordFailure, bucket: string): Answer {
  if (failure.status !== 429) {
    const messages: Record<number, string> = {
      403: "Missing Permissions",
      404: "Unknown Channel",
      500: "Internal Server Error",
    };
    return json(failure.status, {
      message: messages[failure.status],
      code: failure.status === 403 ? 50013 : 0,
    });
  }
  const after = failure.retryAfter ?? 1;
  return {
    status: 429,
    body: { message: "You are being rate limited.", retry_after: after, global: failure.global === true },
    headers: {
      "retry-after": String(Math.ceil(after)),
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String((Date.now() + after * 1000) / 1000),
      "x-ratelimit-reset-after": String(after),
      "x-ratelimit-bucket": bucket,
      "x-ratelimit-scope": failure.global ? "global" : "user",
      ...(failure.global ? { "x-ratelimit-global": "true" } : {}),
    },
  };
}

/** A route's template: ids as `:id`, interaction and webhook tokens as `:token`. */
export function routeTemplate(path: string): string {
  const parts = path.split("/");
  return parts
    .map((seg, i) =>
      /^\d+$/.test(seg)
        ? ":id"
        : i === 3 && (parts[1] === "interactions" || parts[1] === "webhooks")
          ? ":token"
          : seg,
    )
    .join("/");
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

async function jsonBody(req: IncomingMessage): Promise<unknown> {
  const text = (await readBody(req)).toString("utf8");
  if (text === "") return undefined;
  // discord.js sends JSON; multipart (files) is not part of this fake.
  return JSON.parse(text);
}

async function handle(s: State, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://x");
  const send = (a: Answer) => {
    // A 204 has no body and no content type (discord.js parses any JSON-typed body).
    const headers = { ...(a.body === undefined ? {} : { "content-type": "application/json" }), ...a.headers };
    res.writeHead(a.status, headers).end(a.body === undefined ? undefined : JSON.stringify(a.body));
  };
  if (!url.pathname.startsWith("/api/v10/")) return send(json(404, { message: "404: Not Found", code: 0 }));
  if (
    req.headers.authorization !== `Bot ${s.o.token}` &&
    !url.pathname.startsWith("/api/v10/interactions/") &&
    !url.pathname.startsWith("/api/v10/webhooks/")
  )
    return send(json(401, { message: "401: Unauthorized", code: 0 }));
  const method = req.method ?? "GET";
  const path = url.pathname.slice("/api/v10".length);
  let body: unknown;
  try {
    body = await jsonBody(req);
  } catch {
    return send(json(400, { message: "400: Bad Request", code: 50109 }));
  }
  const key = `${method} ${routeTemplate(path)}`;
  const call = s.api.record({
    method: key,
    params: isRecord(body) ? body : {},
    at: Date.now(),
    route: path,
    body,
    status: 0,
  });
  const scripted = s.api.takeFailure(key);
  const bucket = Buffer.from(`${method}:${path.split("/").slice(0, 3).join("/")}`)
    .toString("hex")
    .slice(0, 32);
  let answer: Answer;
  if (scripted) {
    answer = rateLimitAnswer(scripted, bucket);
  } else {
    answer = route(s, method, path, body);
    answer.headers = {
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": "4",
      "x-ratelimit-reset": String((Date.now() + 5000) / 1000),
      "x-ratelimit-reset-after": "5.000",
      "x-ratelimit-bucket": bucket,
      ...answer.headers,
    };
  }
  call.status = answer.status;
  s.api.settle(call);
  const hold = s.holds.indexOf(key);
  if (hold >= 0) {
    s.holds.splice(hold, 1);
    return; // never answered; the connection ends when the client goes away
  }
  send(answer);
}

function slashCommand(
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

/** Starts a fake Discord (REST + gateway) on a free local port. */
export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const o: Required<Omit<FakeDiscordOptions, "ids" | "port">> = {
    token: options.token ?? "fake-discord-token.AAAA.bbbbbbbbbbbbbbbb",
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250,
    messageContentAllowed: options.messageContentAllowed ?? true,
    interactionResponseMs: options.interactionResponseMs ?? 3000,
    hello: options.hello ?? true,
  };
  const appId = snowflake();
  const bot = user(appId, "hub-test-bot", true);
  const fixed = options.ids ?? {};
  const human = user(fixed.user ?? snowflake(), "ann");
  const ids = {
    guild: fixed.guild ?? snowflake(),
    botRole: snowflake(),
    channel: fixed.channel ?? snowflake(),
    thread: fixed.thread ?? snowflake(),
    dm: fixed.dm ?? snowflake(),
    app: appId,
  };
  let port = 0;
  const gateway = new FakeDiscordGateway(
    {
      token: o.token,
      messageContentAllowed: o.messageContentAllowed,
      heartbeatIntervalMs: o.heartbeatIntervalMs,
      hello: o.hello,
      readyData: () => ({
        user: { ...bot, verified: true, mfa_enabled: false, flags: 0 },
        guilds: [{ id: ids.guild }],
        application: { id: appId, flags: 0 },
      }),
      guildCreates: () => [guildCreate(s)],
    },
    () => `ws://127.0.0.1:${port}/gateway`,
  );
  const s: State = {
    o,
    bot,
    human,
    ids,
    gateway,
    messages: new Map(),
    sent: [],
    nonces: new Map(),
    typing: [],
    commands: new Map(),
    interactions: [],
    holds: [],
    api: new FakeApi<DiscordCall, DiscordFailure>({ name: "fake discord" }),
  };
  const server = await startHttpServer(
    (req, res) => handle(s, req, res),
    (res) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "500: Internal Server Error", code: 0 }));
    },
    options.port ?? 0,
    (req, socket, head) => {
      if (new URL(req.url ?? "/", "http://x").pathname === "/gateway") gateway.upgrade(req, socket, head);
      else socket.destroy();
    },
  );
  port = server.port;
  return {
    restApi: `${server.url}/api`,
    token: o.token,
    bot,
    applicationId: appId,
    guildId: ids.guild,
    botRoleId: ids.botRole,
    channelId: ids.channel,
    threadId: ids.thread,
    user: human,
    dmChannelId: ids.dm,
    gateway,
    api: s.api,
    calls: s.api.calls,
    sent: (channelId) => (channelId === undefined ? s.sent : s.sent.filter((m) => m.channelId === channelId)),
    typing: s.typing,
    commands: s.commands,
    interactions: s.interactions,
    userMessage: (opts) => userMessage(s, opts),
    messageCreatePayload: (opts) => messageCreateData(s, buildUserMessage(s, opts)),
    redeliver: (message) =>
      s.gateway.dispatch(GatewayDispatchEvents.MessageCreate, messageCreateData(s, message)),
    slashCommand: (name, opts) => slashCommand(s, name, opts),
    failNext: (route, failure, times = 1) => s.api.failNext(route, failure, times),
    holdNextResponse: (route) => void s.holds.push(route),
    close: async () => {
      gateway.shutdown();
      await server.close();
    },
  };
}
