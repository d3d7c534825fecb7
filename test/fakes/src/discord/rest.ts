import type { IncomingMessage, ServerResponse } from "node:http";
import { type APIAttachment, ChannelType, GatewayDispatchEvents, MessageType } from "discord-api-types/v10";
import { boundaryOf, type MultipartPart, parseMultipart, readBody } from "../kit/index.js";
import { liveRoute } from "./live.js";
import {
  channelTypeOf,
  guildChannels,
  messageCreateData,
  messageOf,
  parseMentions,
  type State,
  snowflake,
} from "./payloads.js";
import type { DiscordFailure, DiscordSentMessage } from "./types.js";

// Discord's REST API under /api/v10 as the fake answers it: routes, JSON bodies, error envelopes,
// nonce de-duplication (enforce_nonce), allowed_mentions, and X-RateLimit-* headers with 429s.

/** GET /channels/:id: the channel object (guild channels and threads as in GUILD_CREATE, the DM with its recipient). */
export function channelOf(s: State, id: string): Answer {
  const { channels, threads } = guildChannels(s);
  const found = [...channels, ...threads].find((c) => c.id === id);
  if (found) return json(200, found);
  if (id === s.ids.dm)
    return json(200, { id, type: ChannelType.DM, last_message_id: null, flags: 0, recipients: [s.human] });
  return json(404, { message: "Unknown Channel", code: 10003 });
}

export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export const json = (status: number, body?: unknown): Answer => ({
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
  const uploads = attachmentsOf(body);
  if ("status" in uploads) return uploads;
  if (content.trim() === "" && uploads.files.length === 0)
    return json(400, { message: "Cannot send an empty message", code: 50006 });
  const nonce = body.nonce;
  if (
    nonce !== undefined &&
    !(typeof nonce === "number" || (typeof nonce === "string" && nonce.length <= 25))
  )
    return invalidForm("nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.");
  // enforce_nonce: a nonce this author used in the last few minutes returns the message it made.
  const nonceKey = `${s.bot.id}:${String(nonce)}`;
  const known = nonce !== undefined && body.enforce_nonce === true ? s.nonces.get(nonceKey) : undefined;
  const earlier = known && Date.now() - known.at <= s.o.nonceWindowMs ? known.message : undefined;
  if (earlier) return json(200, earlier);
  const ref = body.message_reference as { message_id?: string; fail_if_not_exists?: boolean } | undefined;
  const target = ref?.message_id ? s.messages.get(ref.message_id) : undefined;
  if (ref?.message_id && !target && ref.fail_if_not_exists !== false)
    return invalidForm("message_reference", "REPLIES_UNKNOWN_MESSAGE", "Unknown message");
  const message = messageOf(s, channelId, s.bot, content, {
    ...(nonce !== undefined ? { nonce: nonce as string } : {}),
    ...(uploads.attachments.length ? { attachments: uploads.attachments } : {}),
    ...(target
      ? {
          type: MessageType.Reply,
          message_reference: { type: 0, message_id: target.id, channel_id: channelId },
          referenced_message: target,
        }
      : {}),
  });
  if (nonce !== undefined && body.enforce_nonce === true) s.nonces.set(nonceKey, { message, at: Date.now() });
  s.sent.push({
    channelId,
    body,
    message,
    pinged: pingsOf(content, body.allowed_mentions),
    at: Date.now(),
    ...(uploads.files.length ? { files: uploads.files } : {}),
  });
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

/** GET /applications/@me: the bot's application; its flags say whether Message Content is enabled (1 << 19, under 100 servers). */
function currentApplication(s: State): Record<string, unknown> {
  return {
    id: s.ids.app,
    name: s.bot.username,
    description: "",
    bot_public: true,
    bot_require_code_grant: false,
    verify_key: "0".repeat(64),
    flags: s.o.messageContentAllowed ? 1 << 19 : 0,
    bot: s.bot,
  };
}

/**
 * GET /channels/:id/messages?after=&limit=: the channel's messages after `after` (the oldest `limit` of
 * them, default 50, at most 100), newest first as Discord lists them.
 */
function channelMessages(s: State, channelId: string, query: URLSearchParams): Answer {
  if (channelTypeOf(s, channelId) === undefined)
    return json(404, { message: "Unknown Channel", code: 10003 });
  const after = BigInt(query.get("after") ?? "0");
  const limit = Math.min(Math.max(Number(query.get("limit") ?? 50), 1), 100);
  const later = [...s.messages.values()]
    .filter((m) => m.channel_id === channelId && BigInt(m.id) > after)
    .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))
    .slice(0, limit);
  return json(200, later.reverse());
}

function route(s: State, method: string, path: string, body: unknown, query: URLSearchParams): Answer {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const b = (body ?? {}) as Record<string, unknown>;
  if (method === "GET" && path === "/gateway/bot")
    return json(200, {
      url: s.gateway.url(),
      shards: 1,
      session_start_limit: {
        total: 1000,
        remaining: s.o.sessionStartsRemaining,
        reset_after: 86_400_000,
        max_concurrency: 1,
      },
    });
  if (method === "GET" && path === "/gateway") return json(200, { url: s.gateway.url() });
  // Clients may send `@me` percent-encoded (discord.js does: `/users/%40me`).
  const plain = decodeURIComponent(path);
  if (method === "GET" && plain === "/users/@me") return json(200, s.bot);
  if (method === "GET" && plain === "/applications/@me") return json(200, currentApplication(s));
  const live = liveRoute(s, method, parts, b);
  if (live) return live;
  if (parts[0] === "channels" && parts[1]) {
    if (method === "POST" && parts[2] === "messages" && parts.length === 3)
      return createMessage(s, parts[1], b);
    if (method === "GET" && parts.length === 2) return channelOf(s, parts[1]);
    if (method === "GET" && parts[2] === "messages" && parts.length === 3)
      return channelMessages(s, parts[1], query);
    if (method === "POST" && parts[2] === "typing") {
      if (channelTypeOf(s, parts[1]) === undefined)
        return json(404, { message: "Unknown Channel", code: 10003 });
      s.typing.push(parts[1]);
      s.typingAt.push(Date.now());
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
      401: "401: Unauthorized",
      403: "Missing Permissions",
      404: "Unknown Channel",
      500: "Internal Server Error",
    };
    const codes: Record<number, number> = { 401: 0, 403: 50013, 404: 10003, 500: 0 };
    return json(failure.status, {
      message: failure.message ?? messages[failure.status],
      code: failure.code ?? codes[failure.status],
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
  const parts = path.split("/").map(decodeURIComponent);
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

/** Multipart file parts of a request, kept beside the JSON body (a symbol key: never part of the payload). */
const FILES = Symbol("files");

async function jsonBody(req: IncomingMessage): Promise<unknown> {
  const raw = await readBody(req);
  const boundary = boundaryOf(String(req.headers["content-type"] ?? ""));
  if (boundary && /multipart\/form-data/i.test(String(req.headers["content-type"]))) {
    // Uploads: the JSON body is the `payload_json` part, the files are `files[n]` parts.
    const parts = parseMultipart(raw, boundary);
    const payload = parts.find((p) => p.name === "payload_json" && p.filename === undefined);
    const body = payload ? (JSON.parse(payload.data.toString("utf8")) as Record<string, unknown>) : {};
    return Object.assign(body, { [FILES]: parts.filter((p) => /^files\[\d+\]$/.test(p.name)) });
  }
  const text = raw.toString("utf8");
  if (text === "") return undefined;
  return JSON.parse(text);
}

/**
 * The attachments of a message with uploads: each `files[n]` part needs an
 * `attachments` entry with `id` n when `attachments` is given (Discord's rule).
 */
function attachmentsOf(
  body: Record<string, unknown>,
): { files: NonNullable<DiscordSentMessage["files"]>; attachments: APIAttachment[] } | Answer {
  const parts = ((body as { [FILES]?: MultipartPart[] })[FILES] ?? []) as MultipartPart[];
  const declared = Array.isArray(body.attachments)
    ? (body.attachments as Array<{ id?: unknown }>)
    : undefined;
  const files: NonNullable<DiscordSentMessage["files"]> = [];
  const attachments: APIAttachment[] = [];
  for (const part of parts) {
    const n = part.name.slice(6, -1);
    if (declared && !declared.some((a) => String(a.id) === n))
      return invalidForm("attachments", "ATTACHMENT_NOT_FOUND", `files[${n}] has no attachments entry`);
    const filename = part.filename ?? "unknown";
    files.push({ filename, contentType: part.contentType, data: part.data });
    const id = snowflake();
    attachments.push({
      id,
      filename,
      size: part.data.length,
      url: `https://cdn.discordapp.com/attachments/${id}/${filename}`,
      proxy_url: `https://media.discordapp.net/attachments/${id}/${filename}`,
      ...(part.contentType ? { content_type: part.contentType } : {}),
    });
  }
  return { files, attachments };
}

/** Answers one REST request (recorded in the kit's FakeApi, scripted failures and holds applied). */
export async function handle(s: State, req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    answer = route(s, method, path, body, url.searchParams);
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
