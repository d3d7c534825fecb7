import type { IncomingMessage, ServerResponse } from "node:http";
import type { User } from "grammy/types";
import { FakeApi, readBody, startHttpServer } from "../kit/index.js";
import { MessageMethods } from "./messages.js";
import {
  type Answer,
  badRequest,
  boolParam,
  errorAnswer,
  okAnswer,
  type Params,
  readParams,
} from "./protocol.js";
import { TelegramStore, updateId } from "./store.js";
import {
  type FakeTelegram,
  type FakeTelegramOptions,
  TelegramApiError,
  type TelegramCall,
  type TelegramFailure,
} from "./types.js";
import { UpdateFeed } from "./updates.js";

// The fake Bot API server: HTTP, tokens and method dispatch. Telegram's own state lives in the store
// (chats, messages, files), the feed (getUpdates and the webhook) and the message methods; recording,
// injected failures, stubs and waiting for calls come from the shared kit.

/** The methods that post a message (what `sent()` lists, in order). */
const SENDS = new Set(["sendMessage", "sendPhoto", "sendDocument"]);

type Handler = (params: Params, signal: AbortSignal, parked: () => void) => Answer | Promise<Answer>;

function methodTable(feed: UpdateFeed, messages: MessageMethods): Record<string, Handler> {
  return {
    getMe: () => messages.getMe(),
    getUpdates: (params, signal, parked) => feed.getUpdates(params, signal, parked),
    setWebhook: (params) => feed.setWebhook(params),
    deleteWebhook: (params) => {
      if (boolParam(params.drop_pending_updates)) feed.updates = [];
      return feed.deleteWebhook();
    },
    getWebhookInfo: () => feed.getWebhookInfo(),
    sendMessage: (params) => messages.sendMessage(params),
    sendPhoto: (params) => messages.sendFile(params, "photo"),
    sendDocument: (params) => messages.sendFile(params, "document"),
    sendChatAction: (params) => messages.sendChatAction(params),
    editMessageText: (params) => messages.editMessageText(params),
    deleteMessage: (params) => messages.deleteMessage(params),
    setMessageReaction: (params) => messages.setMessageReaction(params),
    getFile: (params) => messages.getFile(params),
  };
}

function send(res: ServerResponse, answer: Answer): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body);
}

/** The Bot API's HTTP surface over the fake's state: /bot<token>/<method> and /file/bot<token>/<path>. */
class BotApiHttp {
  readonly #methods: Record<string, Handler>;
  // Telegram matches method names case-insensitively.
  readonly #canonical: Map<string, string>;

  constructor(
    private readonly token: string,
    private readonly api: FakeApi<TelegramCall, TelegramFailure>,
    private readonly store: TelegramStore,
    methods: Record<string, Handler>,
  ) {
    this.#methods = methods;
    this.#canonical = new Map(Object.keys(methods).map((m) => [m.toLowerCase(), m]));
  }

  async #callMethod(
    method: string,
    params: Params,
    signal: AbortSignal,
    parked: () => void,
  ): Promise<Answer> {
    const failure = this.api.takeFailure(method);
    if (failure) return errorAnswer(failure);
    const stub = this.api.stubFor(method);
    if (stub) {
      try {
        return okAnswer(await stub(params));
      } catch (err) {
        if (err instanceof TelegramApiError) return errorAnswer(err.failure);
        throw err;
      }
    }
    const name = this.#canonical.get(method.toLowerCase());
    const handler = name === undefined ? undefined : this.#methods[name];
    if (!handler) return errorAnswer({ error_code: 404, description: "Not Found" });
    return handler(params, signal, parked);
  }

  #serveFile(res: ServerResponse, token: string, path: string): void {
    if (token !== this.token || !path.startsWith("files/")) {
      send(res, errorAnswer({ error_code: 404, description: "Not Found" }));
      return;
    }
    const data = this.store.fileBytes(path.slice("files/".length));
    res
      .writeHead(200, { "content-type": "application/octet-stream", "content-length": data.length })
      .end(data);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (fileMatch) return this.#serveFile(res, fileMatch[1] ?? "", decodeURIComponent(fileMatch[2] ?? ""));
    const match = /^\/bot([^/]+)\/(?:test\/)?([^/]+)$/.exec(url.pathname);
    if (!match) return send(res, errorAnswer({ error_code: 404, description: "Not Found" }));
    if (decodeURIComponent(match[1] ?? "") !== this.token) {
      await readBody(req);
      return send(res, errorAnswer({ error_code: 401, description: "Unauthorized" }));
    }
    const requested = match[2] ?? "";
    const call: TelegramCall = {
      method: this.#canonical.get(requested.toLowerCase()) ?? requested,
      params: {},
      at: Date.now(),
      ...(req.socket.remotePort !== undefined ? { remotePort: req.socket.remotePort } : {}),
    };
    this.api.record(call);
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
      answer = await this.#callMethod(requested, params, aborter.signal, () => this.api.settle(call));
    }
    if (answer.status !== 200) call.error_code = answer.status;
    call.answeredAt = Date.now();
    send(res, answer);
    this.api.settle(call);
  }
}

/** POSTs a body to the registered webhook the way Telegram does (with its secret token header). */
async function postToWebhook(
  feed: UpdateFeed,
  body: string,
  secretToken: string | null | undefined,
): Promise<{ status: number; body: string }> {
  const webhook = feed.webhook;
  if (!webhook) throw new Error("fake telegram: no webhook is set (call setWebhook first)");
  const headers: Record<string, string> = { "content-type": "application/json" };
  const secret = secretToken === undefined ? webhook.secret_token : secretToken;
  if (secret !== undefined && secret !== null) headers["x-telegram-bot-api-secret-token"] = secret;
  const res = await fetch(webhook.url, { method: "POST", headers, body });
  return { status: res.status, body: await res.text() };
}

/** Starts a fake Telegram Bot API server on a free local port (or `options.port`). */
export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const token = options.token ?? "123456:TEST-TOKEN";
  const botId = options.botId ?? 123456;
  const botUsername = options.botUsername ?? "hub_test_bot";
  const botUser: User & { username: string } = {
    id: botId,
    is_bot: true,
    first_name: options.botFirstName ?? "Hub Test Bot",
    username: botUsername,
  };
  const api = new FakeApi<TelegramCall, TelegramFailure>({ name: "fake telegram", caseInsensitive: true });
  const store = new TelegramStore();
  const feed = new UpdateFeed();
  const http = new BotApiHttp(token, api, store, methodTable(feed, new MessageMethods(store, botUser)));
  const server = await startHttpServer(
    (req, res) => http.handle(req, res),
    (res, err) =>
      send(res, errorAnswer({ error_code: 500, description: `Internal Server Error: ${String(err)}` })),
    options.port,
  );
  let closed = false;
  return {
    apiRoot: server.url,
    token,
    botId,
    botUsername,
    calls: api.calls,
    sent: (chatId) =>
      api.calls
        .filter(
          (c) =>
            SENDS.has(c.method) &&
            c.error_code === undefined &&
            (chatId === undefined || String(c.params.chat_id) === String(chatId)),
        )
        .map((c) => c.params),
    callsOf: (method) => api.callsOf(method),
    shown: (chatId) => store.shown(chatId),
    reactions: (chatId, messageId) => store.messages.get(`${String(chatId)}:${messageId}`)?.reactions ?? [],
    waitForCall: (method, predicate, timeoutMs) => api.waitForCall(method, predicate, timeoutMs),
    pushUpdate: (update) => {
      const stored = store.withUpdateId(update);
      feed.push(stored);
      return updateId(stored);
    },
    get pendingUpdates() {
      return feed.updates;
    },
    failNext: (method, failure, times = 1) => api.failNext(method, failure, times),
    get webhook() {
      return feed.webhook ? { ...feed.webhook } : undefined;
    },
    postWebhook: (update, secretToken) =>
      postToWebhook(feed, JSON.stringify(store.withUpdateId(update)), secretToken),
    postWebhookRaw: (body, secretToken) => postToWebhook(feed, body, secretToken),
    setFile: (fileId, data) => {
      store.files.set(fileId, typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data));
    },
    stub: (method, handler) => api.stub(method, handler),
    unstub: (method) => api.unstub(method),
    close: async () => {
      if (closed) return;
      closed = true;
      feed.poll?.finish(okAnswer([]));
      // Let the answer to a pending long poll reach the socket before connections are cut.
      await new Promise((r) => setImmediate(r));
      await server.close();
    },
  };
}
