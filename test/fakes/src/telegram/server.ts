import type { IncomingMessage, ServerResponse } from "node:http";
import type { MessageEntity, User, UserFromGetMe, WebhookInfo } from "grammy/types";
import { FakeApi, readBody, startHttpServer } from "../kit/index.js";
import { parseTelegramHtml, trimFormatted } from "./html.js";
import {
  type Answer,
  arrayParam,
  badRequest,
  boolParam,
  CHAT_ACTIONS,
  errorAnswer,
  GET_UPDATES_CONFLICT_OTHER,
  GET_UPDATES_CONFLICT_WEBHOOK,
  intParam,
  isRecord,
  MAX_MESSAGE_LENGTH,
  objParam,
  okAnswer,
  type Params,
  readParams,
  strParam,
} from "./protocol.js";
import {
  type FakeTelegram,
  type FakeTelegramOptions,
  type FakeWebhook,
  TelegramApiError,
  type TelegramCall,
  type TelegramFailure,
  telegramErrors,
} from "./types.js";

// The fake Bot API server: Telegram's own methods and state (updates, chats, messages, the webhook);
// recording, injected failures, stubs and waiting for calls come from the shared kit.

const unixNow = () => Math.floor(Date.now() / 1000);

interface StoredMessage {
  message: Record<string, unknown>;
  byBot: boolean;
}

interface PendingPoll {
  limit: number;
  finish(answer: Answer): void;
}

/** Starts a fake Telegram Bot API server on a free local port. */
export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const token = options.token ?? "123456:TEST-TOKEN";
  const botId = options.botId ?? 123456;
  const botUsername = options.botUsername ?? "hub_test_bot";
  const botFirstName = options.botFirstName ?? "Hub Test Bot";
  const botUser: User = { id: botId, is_bot: true, first_name: botFirstName, username: botUsername };

  const api = new FakeApi<TelegramCall, TelegramFailure>({ name: "fake telegram", caseInsensitive: true });
  const calls = api.calls;
  let updates: Array<Record<string, unknown>> = [];
  let nextUpdateId = 1000;
  const files = new Map<string, Buffer>();
  const chats = new Map<string, Record<string, unknown>>();
  const messages = new Map<string, StoredMessage>();
  const lastMessageId = new Map<string, number>();
  let webhook: FakeWebhook | undefined;
  let poll: PendingPoll | undefined;
  let closed = false;

  const msgKey = (chatId: unknown, messageId: unknown) => `${String(chatId)}:${String(messageId)}`;

  /** Remembers a message (and its chat) so replies/edits to it behave like on Telegram. */
  function rememberMessage(message: Record<string, unknown>, byBot: boolean): void {
    const chat = message.chat;
    if (!isRecord(chat)) return;
    const chatKey = String(chat.id);
    chats.set(chatKey, chat);
    const id = intParam(message.message_id);
    if (id === undefined) return;
    messages.set(msgKey(chatKey, id), { message, byBot });
    lastMessageId.set(chatKey, Math.max(lastMessageId.get(chatKey) ?? 0, id));
  }

  function rememberUpdate(update: Record<string, unknown>): void {
    for (const key of [
      "message",
      "edited_message",
      "channel_post",
      "edited_channel_post",
      "business_message",
    ]) {
      const m = update[key];
      if (isRecord(m)) rememberMessage(m, false);
    }
    const cq = update.callback_query;
    if (
      isRecord(cq) &&
      isRecord(cq.message) &&
      !messages.has(msgKey(chatIdOf(cq.message), cq.message.message_id))
    )
      rememberMessage(cq.message, true);
  }

  const chatIdOf = (message: Record<string, unknown>) =>
    isRecord(message.chat) ? message.chat.id : undefined;

  /** Gives the update an update_id if it has none; keeps the counter above explicit ids. */
  function withUpdateId(update: object): Record<string, unknown> {
    const copy: Record<string, unknown> = { ...(update as Record<string, unknown>) };
    const given = intParam(copy.update_id);
    if (given === undefined) copy.update_id = nextUpdateId++;
    else nextUpdateId = Math.max(nextUpdateId, given + 1);
    rememberUpdate(copy);
    return copy;
  }

  const updateId = (u: Record<string, unknown>) => intParam(u.update_id) ?? 0;

  /** The chat object for an id: the one seen in updates, else inferred from the id like Telegram's ranges. */
  function chatFor(chatId: number | string): Record<string, unknown> {
    const known = chats.get(String(chatId));
    if (known) return known;
    if (typeof chatId === "string")
      return { id: -1001000000001, type: "channel", title: chatId, username: chatId.slice(1) };
    if (chatId > 0) return { id: chatId, type: "private", first_name: "User" };
    if (chatId <= -1000000000000) return { id: chatId, type: "supergroup", title: "Group" };
    return { id: chatId, type: "group", title: "Group" };
  }

  /** chat_id as Telegram reads it: an integer, or "@channelusername". */
  function chatIdParam(v: unknown): number | string | undefined {
    const n = intParam(v);
    if (n !== undefined) return n;
    return typeof v === "string" && v.startsWith("@") && v.length > 1 ? v : undefined;
  }

  /** Parses text according to parse_mode; returns the visible text + entities or a 400. */
  function formatText(
    params: Params,
    tooLong: string,
  ): { text: string; entities: MessageEntity[] } | TelegramFailure {
    const raw = strParam(params.text) ?? "";
    const mode = strParam(params.parse_mode)?.toLowerCase() ?? "";
    let parsed: { text: string; entities: MessageEntity[] };
    if (mode === "html") {
      const result = parseTelegramHtml(raw);
      if (!result.ok) return badRequest(`can't parse entities: ${result.description}`);
      parsed = { text: result.text, entities: result.entities };
    } else if (mode === "" || mode === "markdown" || mode === "markdownv2") {
      // Markdown modes are not parsed by the fake: the text is kept as sent.
      const given = Array.isArray(params.entities) ? (params.entities as MessageEntity[]) : [];
      parsed = trimFormatted(raw, given);
    } else {
      return badRequest("unsupported parse_mode");
    }
    if (parsed.text === "") return badRequest("message text is empty");
    // Telegram counts characters (code points) of the visible text.
    if ([...parsed.text].length > MAX_MESSAGE_LENGTH) return badRequest(tooLong);
    return parsed;
  }

  const isFailure = (v: unknown): v is TelegramFailure => isRecord(v) && typeof v.error_code === "number";

  function takeUpdates(limit: number): Array<Record<string, unknown>> {
    return updates.slice(0, limit);
  }

  function getUpdates(params: Params, signal: AbortSignal, parked: () => void): Answer | Promise<Answer> {
    if (webhook) return errorAnswer({ error_code: 409, description: GET_UPDATES_CONFLICT_WEBHOOK });
    const offset = intParam(params.offset) ?? 0;
    const limit = Math.min(100, Math.max(1, intParam(params.limit) ?? 100));
    const timeout = Math.max(0, intParam(params.timeout) ?? 0);
    // Confirming: a positive offset forgets every update below it; a negative one keeps the last -offset.
    if (offset > 0) updates = updates.filter((u) => updateId(u) >= offset);
    else if (offset < 0) updates = updates.slice(offset);
    // Like Telegram, a newer getUpdates kicks out the one still waiting.
    poll?.finish(errorAnswer({ error_code: 409, description: GET_UPDATES_CONFLICT_OTHER }));
    const ready = takeUpdates(limit);
    if (ready.length > 0 || timeout === 0) return okAnswer(ready);
    return new Promise<Answer>((resolve) => {
      const pending: PendingPoll = {
        limit,
        finish: (answer) => {
          clearTimeout(timer);
          if (poll === pending) poll = undefined;
          resolve(answer);
        },
      };
      const timer = setTimeout(() => pending.finish(okAnswer([])), timeout * 1000);
      // The client went away (e.g. grammY's bot.stop() aborts the request): stop waiting.
      signal.addEventListener("abort", () => pending.finish(okAnswer([])), { once: true });
      poll = pending;
      parked();
    });
  }

  function setWebhook(params: Params): Answer {
    const url = strParam(params.url) ?? "";
    if (boolParam(params.drop_pending_updates)) updates = [];
    if (url === "") return deleteWebhookAnswer();
    try {
      new URL(url);
    } catch {
      return errorAnswer(badRequest("bad webhook: invalid URL"));
    }
    const secret = strParam(params.secret_token);
    if (secret !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(secret)) {
      return errorAnswer(badRequest("secret token contains unallowed characters"));
    }
    const next: FakeWebhook = { url };
    if (secret !== undefined) next.secret_token = secret;
    const maxConnections = intParam(params.max_connections);
    if (maxConnections !== undefined) next.max_connections = maxConnections;
    const allowed = arrayParam(params.allowed_updates);
    if (allowed) next.allowed_updates = allowed.map(String);
    webhook = next;
    // A long poll still waiting learns about the webhook the hard way, like on Telegram.
    poll?.finish(errorAnswer({ error_code: 409, description: GET_UPDATES_CONFLICT_WEBHOOK }));
    return okAnswer(true, "Webhook was set");
  }

  function deleteWebhookAnswer(): Answer {
    const had = webhook !== undefined;
    webhook = undefined;
    return okAnswer(true, had ? "Webhook was deleted" : "Webhook is already deleted");
  }

  function getWebhookInfo(): Answer {
    const info: WebhookInfo = {
      url: webhook?.url ?? "",
      has_custom_certificate: false,
      pending_update_count: updates.length,
    };
    if (webhook) {
      info.max_connections = webhook.max_connections ?? 40;
      info.ip_address = "127.0.0.1";
      if (webhook.allowed_updates)
        info.allowed_updates = webhook.allowed_updates as WebhookInfo["allowed_updates"];
    }
    return okAnswer(info);
  }

  function sendMessage(params: Params): Answer {
    const chatId = chatIdParam(params.chat_id);
    if (chatId === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const formatted = formatText(params, "message is too long");
    if (isFailure(formatted)) return errorAnswer(formatted);
    const chat = chatFor(chatId);
    const chatKey = String(chat.id);
    const messageId = (lastMessageId.get(chatKey) ?? 0) + 1;
    const message: Record<string, unknown> = {
      message_id: messageId,
      from: botUser,
      chat,
      date: unixNow(),
    };
    const threadId = intParam(params.message_thread_id);
    if (threadId !== undefined) {
      message.message_thread_id = threadId;
      if (chat.is_forum === true) message.is_topic_message = true;
    }
    const replyParams = objParam(params.reply_parameters);
    const replyToId = intParam(replyParams?.message_id) ?? intParam(params.reply_to_message_id);
    if (replyToId !== undefined) {
      const replied = messages.get(msgKey(chatKey, replyToId));
      if (replied) {
        const { reply_to_message: _nested, ...rest } = replied.message;
        message.reply_to_message = rest;
      } else if (!boolParam(replyParams?.allow_sending_without_reply)) {
        return errorAnswer(badRequest("message to be replied not found"));
      }
    }
    message.text = formatted.text;
    if (formatted.entities.length > 0) message.entities = formatted.entities;
    const preview = objParam(params.link_preview_options);
    if (preview) message.link_preview_options = preview;
    rememberMessage(message, true);
    return okAnswer(message);
  }

  function editMessageText(params: Params): Answer {
    const formatted = formatText(params, "MESSAGE_TOO_LONG");
    if (isFailure(formatted)) {
      const empty = formatted.description === "Bad Request: message text is empty";
      return errorAnswer(empty ? badRequest("text must be non-empty") : formatted);
    }
    if (strParam(params.inline_message_id) !== undefined) return okAnswer(true);
    const chatId = chatIdParam(params.chat_id);
    if (chatId === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const stored = messages.get(msgKey(chatFor(chatId).id, intParam(params.message_id)));
    if (!stored) return errorAnswer(badRequest("message to edit not found"));
    if (!stored.byBot) return errorAnswer(badRequest("message can't be edited"));
    const before = stored.message;
    const entities = formatted.entities.length > 0 ? formatted.entities : undefined;
    if (before.text === formatted.text && JSON.stringify(before.entities) === JSON.stringify(entities)) {
      return errorAnswer(telegramErrors.messageNotModified());
    }
    const edited: Record<string, unknown> = { ...before, text: formatted.text, edit_date: unixNow() };
    if (entities) edited.entities = entities;
    else delete edited.entities;
    stored.message = edited;
    return okAnswer(edited);
  }

  function sendChatAction(params: Params): Answer {
    if (chatIdParam(params.chat_id) === undefined) return errorAnswer(badRequest("chat_id is empty"));
    const action = strParam(params.action) ?? "";
    if (!CHAT_ACTIONS.has(action)) return errorAnswer(badRequest("wrong parameter action in request"));
    return okAnswer(true);
  }

  function fileBytes(fileId: string): Buffer {
    return files.get(fileId) ?? Buffer.from(`fake file ${fileId}`, "utf8");
  }

  function getFile(params: Params): Answer {
    const fileId = strParam(params.file_id) ?? "";
    if (fileId === "") return errorAnswer(badRequest("file_id not specified"));
    return okAnswer({
      file_id: fileId,
      file_unique_id: `u${Buffer.from(fileId).toString("base64url").slice(0, 14)}`,
      file_size: fileBytes(fileId).length,
      file_path: `files/${fileId}`,
    });
  }

  function getMe(): Answer {
    const me: UserFromGetMe = {
      ...botUser,
      is_bot: true,
      username: botUsername,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
      can_connect_to_business: false,
      has_main_web_app: false,
      has_topics_enabled: false,
      allows_users_to_create_topics: false,
      can_manage_bots: false,
      supports_join_request_queries: false,
    };
    return okAnswer(me);
  }

  type Handler = (params: Params, signal: AbortSignal, parked: () => void) => Answer | Promise<Answer>;
  const methods: Record<string, Handler> = {
    getMe,
    getUpdates,
    setWebhook,
    deleteWebhook: (params) => {
      if (boolParam(params.drop_pending_updates)) updates = [];
      return deleteWebhookAnswer();
    },
    getWebhookInfo,
    sendMessage,
    sendChatAction,
    editMessageText,
    getFile,
  };
  // Telegram matches method names case-insensitively.
  const canonical = new Map(Object.keys(methods).map((m) => [m.toLowerCase(), m]));

  async function callMethod(
    method: string,
    params: Params,
    signal: AbortSignal,
    parked: () => void,
  ): Promise<Answer> {
    const key = method.toLowerCase();
    const failure = api.takeFailure(method);
    if (failure) return errorAnswer(failure);
    const stub = api.stubFor(method);
    if (stub) {
      try {
        return okAnswer(await stub(params));
      } catch (err) {
        if (err instanceof TelegramApiError) return errorAnswer(err.failure);
        throw err;
      }
    }
    const name = canonical.get(key);
    const handler = name === undefined ? undefined : methods[name];
    if (!handler) return errorAnswer({ error_code: 404, description: "Not Found" });
    return handler(params, signal, parked);
  }

  function send(res: ServerResponse, answer: Answer): void {
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (fileMatch) {
      const path = decodeURIComponent(fileMatch[2] ?? "");
      if (fileMatch[1] !== token || !path.startsWith("files/")) {
        return send(res, errorAnswer({ error_code: 404, description: "Not Found" }));
      }
      const data = fileBytes(path.slice("files/".length));
      res
        .writeHead(200, { "content-type": "application/octet-stream", "content-length": data.length })
        .end(data);
      return;
    }
    const match = /^\/bot([^/]+)\/(?:test\/)?([^/]+)$/.exec(url.pathname);
    if (!match) return send(res, errorAnswer({ error_code: 404, description: "Not Found" }));
    if (decodeURIComponent(match[1] ?? "") !== token) {
      await readBody(req);
      return send(res, errorAnswer({ error_code: 401, description: "Unauthorized" }));
    }
    const requested = match[2] ?? "";
    const call: TelegramCall = {
      method: canonical.get(requested.toLowerCase()) ?? requested,
      params: {},
      at: Date.now(),
    };
    api.record(call);
    const params = await readParams(req, url);
    let answer: Answer;
    if (params === undefined) {
      answer = errorAnswer(badRequest("can't parse JSON"));
    } else {
      call.params = params;
      const aborter = new AbortController();
      res.on("close", () => {
        if (!res.writableFinished) aborter.abort();
      });
      answer = await callMethod(requested, params, aborter.signal, () => api.settle(call));
    }
    if (answer.status !== 200) call.error_code = answer.status;
    send(res, answer);
    api.settle(call);
  }

  const server = await startHttpServer(
    handle,
    (res, err) =>
      send(res, errorAnswer({ error_code: 500, description: `Internal Server Error: ${String(err)}` })),
    options.port,
  );
  const apiRoot = server.url;

  async function postToWebhook(
    body: string,
    secretToken: string | null | undefined,
  ): Promise<{ status: number; body: string }> {
    if (!webhook) throw new Error("fake telegram: no webhook is set (call setWebhook first)");
    const headers: Record<string, string> = { "content-type": "application/json" };
    const secret = secretToken === undefined ? webhook.secret_token : secretToken;
    if (secret !== undefined && secret !== null) headers["x-telegram-bot-api-secret-token"] = secret;
    const res = await fetch(webhook.url, { method: "POST", headers, body });
    return { status: res.status, body: await res.text() };
  }

  return {
    apiRoot,
    token,
    botId,
    botUsername,
    calls,
    sent: (chatId) =>
      calls
        .filter(
          (c) =>
            c.method === "sendMessage" &&
            c.error_code === undefined &&
            (chatId === undefined || String(c.params.chat_id) === String(chatId)),
        )
        .map((c) => c.params),
    callsOf: (method) => api.callsOf(method),
    waitForCall: (method, predicate, timeoutMs) => api.waitForCall(method, predicate, timeoutMs),
    pushUpdate: (update) => {
      const stored = withUpdateId(update);
      updates.push(stored);
      updates.sort((a, b) => updateId(a) - updateId(b));
      if (poll) poll.finish(okAnswer(takeUpdates(poll.limit)));
      return updateId(stored);
    },
    get pendingUpdates() {
      return updates;
    },
    failNext: (method, failure, times = 1) => api.failNext(method, failure, times),
    get webhook() {
      return webhook ? { ...webhook } : undefined;
    },
    postWebhook: (update, secretToken) => postToWebhook(JSON.stringify(withUpdateId(update)), secretToken),
    postWebhookRaw: (body, secretToken) => postToWebhook(body, secretToken),
    setFile: (fileId, data) => {
      files.set(fileId, typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data));
    },
    stub: (method, handler) => api.stub(method, handler),
    close: async () => {
      if (closed) return;
      closed = true;
      poll?.finish(okAnswer([]));
      // Let the answer to a pending long poll reach the socket before connections are cut.
      await new Promise((r) => setImmediate(r));
      await server.close();
    },
  };
}
