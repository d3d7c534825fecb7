import { createHmac } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  FakeApi,
  FakeFileHost,
  type FakeHttpServer,
  type HostedFileInput,
  readBody,
  startHttpServer,
} from "../kit/index.js";
import { FakeSocketMode } from "./socket.js";
import type {
  DeliveryOptions,
  FakeSlack,
  FakeSlackOptions,
  SlackCall,
  SlackFailure,
  SlackMessage,
} from "./types.js";
import { type Answer, fail, ok, type Params, SlackWorkspace } from "./workspace.js";

// A local fake of Slack for the real @slack/bolt and @slack/web-api clients: the Web API
// (POST {apiUrl}{method}, Bearer token, form or JSON bodies, `{ ok, error }` answers, HTTP 429
// with Retry-After), Events API deliveries signed exactly as Slack signs them (`v0=` + HMAC-SHA256
// of `v0:<timestamp>:<raw body>`, retry headers), and Socket Mode (apps.connections.open, then a
// WebSocket with hello, events_api envelopes and envelope acks). It keeps every message it saw or
// accepted, so replies, reactions and history lookups behave like on Slack. Recording, injected
// failures, stubs and waiting for calls come from the shared kit.

async function readParams(req: IncomingMessage): Promise<Params | undefined> {
  const raw = (await readBody(req)).toString("utf8");
  const type = String(req.headers["content-type"] ?? "");
  try {
    if (type.includes("application/json")) return raw === "" ? {} : (JSON.parse(raw) as Params);
    return Object.fromEntries(new URLSearchParams(raw));
  } catch {
    return undefined;
  }
}

const bearer = (req: IncomingMessage, params: Params | undefined): string | undefined => {
  const auth = String(req.headers.authorization ?? "");
  if (auth.startsWith("Bearer ")) return auth.slice(7);
  return typeof params?.token === "string" ? params.token : undefined;
};

/** The fake Slack: one workspace, its Web API over HTTP, Events API deliveries and Socket Mode. */
class FakeSlackServer implements FakeSlack {
  readonly botToken: string;
  readonly appToken: string;
  readonly signingSecret: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly teamId: string;
  eventsUrl: string | undefined;
  readonly #api = new FakeApi<SlackCall, SlackFailure>({ name: "fake slack" });
  readonly #workspace: SlackWorkspace;
  readonly #methods: Record<string, (p: Params) => Answer>;
  readonly #socket: FakeSocketMode;
  readonly #slow = new Map<string, number>();
  readonly #files = new FakeFileHost();
  #fileSeq = 0;
  #http: FakeHttpServer | undefined;
  #eventSeq = 0;

  constructor(options: FakeSlackOptions) {
    this.botToken = options.botToken ?? "xoxb-test-token";
    this.appToken = options.appToken ?? "xapp-1-test-token";
    this.signingSecret = options.signingSecret ?? "fake-signing-secret-0123456789";
    this.botUserId = options.botUserId ?? "UBOT0001";
    this.botId = options.botId ?? "BBOT0001";
    this.teamId = options.teamId ?? "T0TEAM001";
    const appId = "A0APP0001";
    this.#workspace = new SlackWorkspace(
      {
        botUserId: this.botUserId,
        botId: this.botId,
        teamId: this.teamId,
        appId,
      },
      () => this.#http?.url ?? "http://127.0.0.1",
    );
    this.#methods = this.#workspace.methods();
    this.#socket = new FakeSocketMode(appId);
  }

  async listen(port: number): Promise<void> {
    await this.#socket.listen();
    this.#http = await startHttpServer((req, res) => this.#handle(req, res), undefined, port);
  }

  get apiUrl(): string {
    return `${this.#http?.url}/api/`;
  }

  get calls(): SlackCall[] {
    return this.#api.calls;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    if (req.method === "GET" && path.startsWith("/files-pri/")) return this.#serveFile(req, res, path);
    const upload = /^\/upload\/v1\/(\w+)$/.exec(new URL(req.url ?? "/", "http://fake").pathname);
    if (upload && req.method === "POST") {
      // The upload URL takes the raw bytes (or a form); it answers 200 "OK - <length>".
      const data = await readBody(req);
      const accepted = this.#workspace.receiveUpload(upload[1] ?? "", data);
      return void res.writeHead(accepted ? 200 : 404).end(accepted ? `OK - ${data.length}` : "");
    }
    const match = /^\/api\/([\w.]+)$/.exec(new URL(req.url ?? "/", "http://fake").pathname);
    if (req.method !== "POST" || !match) return void res.writeHead(404).end();
    const params = await readParams(req);
    const call = this.#api.record({ method: match[1] ?? "", params: params ?? {}, at: Date.now() });
    const answer = await this.#answer(call, params, bearer(req, params));
    if (answer.status === 429) call.error = "ratelimited";
    else if (!answer.body.ok) call.error = String(answer.body.error);
    if (!res.destroyed && !res.writableEnded) {
      res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
      res.end(JSON.stringify(answer.body));
    }
    this.#api.settle(call);
  }

  async #answer(call: SlackCall, params: Params | undefined, token: string | undefined): Promise<Answer> {
    const { method } = call;
    if (!params) return fail("invalid_form_data");
    const wait = this.#slow.get(method);
    if (wait !== undefined) {
      // Slow, and carried out even when the client has given up meanwhile (as Slack does).
      this.#slow.delete(method);
      await new Promise((r) => setTimeout(r, wait));
    }
    const failure = this.#api.takeFailure(method);
    if (failure && "status" in failure) {
      const headers = { "retry-after": String(failure.retryAfter) };
      return { status: 429, body: { ok: false, error: "ratelimited" }, headers };
    }
    if (failure) return fail(failure.error);
    if (method === "apps.connections.open") {
      if (token !== this.appToken)
        return fail(token?.startsWith("xapp-") ? "invalid_auth" : "not_allowed_token_type");
      return ok({ url: this.#socket.url() });
    }
    if (token !== this.botToken) return fail(token ? "invalid_auth" : "not_authed");
    const stub = this.#api.stubFor(method);
    if (stub) return ok((stub(params) ?? {}) as Record<string, unknown>);
    return this.#methods[method]?.(params) ?? fail("unknown_method");
  }

  // Slack serves private files only with the bot token; without it, the browser's sign-in page (HTML).
  #serveFile(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (req.headers.authorization !== `Bearer ${this.botToken}` || !this.#files.has(path)) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<html>Sign in to Slack</html>");
      return;
    }
    this.#files.serve(res, path);
  }

  uploadFile(file: HostedFileInput & { user?: string }): Record<string, unknown> {
    this.#fileSeq += 1;
    const id = `F${String(this.#fileSeq).padStart(10, "0")}`;
    const base = `${this.#http?.url}/files-pri/${this.teamId}-${id}`;
    const name = encodeURIComponent(file.name);
    this.#files.add(`/files-pri/${this.teamId}-${id}/${name}`, file);
    this.#files.add(`/files-pri/${this.teamId}-${id}/download/${name}`, file);
    const now = Math.floor(Date.now() / 1000);
    const size = typeof file.bytes === "string" ? Buffer.byteLength(file.bytes) : file.bytes.length;
    return {
      id,
      created: now,
      timestamp: now,
      name: file.name,
      title: file.name,
      mimetype: file.mime,
      filetype: file.name.split(".").at(-1) ?? "binary",
      user: file.user ?? "U0USER0001",
      mode: "hosted",
      is_external: false,
      size,
      url_private: `${base}/${name}`,
      url_private_download: `${base}/download/${name}`,
      permalink: `https://fake.slack.com/files/${file.user ?? "U0USER0001"}/${id}/${name}`,
    };
  }

  get downloads(): string[] {
    return this.#files.downloads;
  }

  callsOf(method: string): SlackCall[] {
    return this.#api.callsOf(method);
  }

  waitForCall(
    method: string,
    predicate?: (call: SlackCall) => boolean,
    timeoutMs?: number,
  ): Promise<SlackCall> {
    return this.#api.waitForCall(method, predicate, timeoutMs);
  }

  stub(method: string, handler: (params: Record<string, unknown>) => unknown): void {
    this.#api.stub(method, handler);
  }

  failNext(method: string, failure: SlackFailure, times = 1): void {
    this.#api.failNext(method, failure, times);
  }

  slowNext(method: string, ms: number): void {
    this.#slow.set(method, ms);
  }

  posted(channel?: string): SlackMessage[] {
    return this.#workspace.messages.filter(
      (m) => m.bot_id === this.botId && (channel === undefined || m.channel === channel),
    );
  }

  messageAt(channel: string, ts: string): SlackMessage | undefined {
    return this.#workspace.find(channel, ts);
  }

  reactionsOn(channel: string, ts: string): string[] {
    return [...(this.#workspace.find(channel, ts)?.reactions.keys() ?? [])];
  }

  userMessage(channel: string, user: string, text: string, threadTs?: string): SlackMessage {
    return this.#workspace.userMessage(channel, user, text, threadTs);
  }

  envelope(event: Record<string, unknown>): Record<string, unknown> {
    this.#eventSeq += 1;
    const seq = this.#eventSeq;
    const authorization = {
      enterprise_id: null,
      team_id: this.teamId,
      user_id: this.botUserId,
      is_bot: true,
      is_enterprise_install: false,
    };
    return {
      token: "legacy-verification-token",
      team_id: this.teamId,
      api_app_id: this.#workspace.ids.appId,
      event: { event_ts: event.ts, ...event },
      type: "event_callback",
      event_id: `Ev${String(seq).padStart(9, "0")}`,
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [authorization],
      is_ext_shared_channel: false,
      event_context: `4-${Buffer.from(`ctx${seq}`).toString("base64url")}`,
    };
  }

  deliver(
    envelope: Record<string, unknown>,
    options?: DeliveryOptions,
  ): Promise<{ status: number; body: string }> {
    return this.deliverRaw(JSON.stringify(envelope), options);
  }

  async deliverRaw(body: string, o: DeliveryOptions = {}): Promise<{ status: number; body: string }> {
    if (!this.eventsUrl) throw new Error("fake slack: set eventsUrl before delivering events");
    const timestamp = String(o.timestamp ?? Math.floor(Date.now() / 1000));
    const hmac = createHmac("sha256", this.signingSecret).update(`v0:${timestamp}:${body}`).digest("hex");
    const headers: Record<string, string> = {
      "content-type": o.contentType ?? "application/json",
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": o.signature ?? `v0=${hmac}`,
      "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
    };
    if (o.retryNum !== undefined) headers["x-slack-retry-num"] = String(o.retryNum);
    if (o.retryReason !== undefined) headers["x-slack-retry-reason"] = o.retryReason;
    const res = await fetch(this.eventsUrl, { method: "POST", headers, body });
    return { status: res.status, body: await res.text() };
  }

  deliverSocket(
    envelope: Record<string, unknown>,
    options?: { retryAttempt?: number; timeoutMs?: number },
  ): Promise<boolean> {
    return this.#socket.deliver(envelope, options);
  }

  disconnectSocket(reason: "refresh_requested" | "link_disabled" | "warning" = "refresh_requested"): void {
    this.#socket.disconnect(reason);
  }

  get socketConnections(): number {
    return this.#socket.connections;
  }

  get socketConnected(): boolean {
    return this.#socket.connected;
  }

  async close(): Promise<void> {
    await this.#socket.close();
    await this.#http?.close();
  }
}

/** Starts a fake Slack (Web API + Events API deliveries + Socket Mode) on a local port. */
export async function startFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const fake = new FakeSlackServer(options);
  await fake.listen(options.port ?? 0);
  return fake;
}
