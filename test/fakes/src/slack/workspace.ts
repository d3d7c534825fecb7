import type { SlackFile, SlackMessage } from "./types.js";

/** Web API parameters as received (form fields or JSON). */
export type Params = Record<string, unknown>;
/** One Web API answer: HTTP status, JSON body, extra headers. */
export type Answer = { status: number; body: Record<string, unknown>; headers?: Record<string, string> };

/** `{ ok: true, ... }`, as every successful Web API call answers. */
export const ok = (body: Record<string, unknown> = {}): Answer => ({
  status: 200,
  body: { ok: true, ...body },
});
/** `{ ok: false, error }` with HTTP 200, as Slack reports a failed call. */
export const fail = (error: string): Answer => ({ status: 200, body: { ok: false, error } });

/** A form value that Slack accepts as JSON text or as an object (JSON bodies). */
function jsonParam(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const truthy = (v: unknown): boolean => v === true || v === "true" || v === "1";

/** Who the fake workspace's bot is. */
export interface WorkspaceIds {
  botUserId: string;
  botId: string;
  teamId: string;
  appId: string;
}

/**
 * The state of one fake Slack workspace (its messages and reactions) and the Web API methods that
 * read and change it, answering like Slack: `ts` ids, threads, metadata only when asked for,
 * `already_reacted`/`no_reaction`, `msg_too_long`, `no_text`.
 */
export class SlackWorkspace {
  readonly messages: SlackMessage[] = [];
  /** Files by id, from files.getUploadURLExternal on. */
  readonly files = new Map<string, SlackFile>();
  #seq = 0;

  constructor(
    readonly ids: WorkspaceIds,
    /** The base of upload URLs (the fake's own server), known once it listens. */
    private readonly uploadBase: () => string = () => "http://127.0.0.1",
  ) {}

  /** The bytes POSTed to a file's upload URL; false when there is no such pending upload. */
  receiveUpload(fileId: string, data: Buffer): boolean {
    const file = this.files.get(fileId);
    if (!file || file.data !== undefined) return false;
    file.data = data;
    return true;
  }

  /** A new message `ts`: the Unix time plus a sequence, unique and increasing like Slack's. */
  nextTs(): string {
    this.#seq += 1;
    return `${Math.floor(Date.now() / 1000)}.${String(this.#seq).padStart(6, "0")}`;
  }

  find(channel: string, ts: string): SlackMessage | undefined {
    return this.messages.find((m) => m.channel === channel && m.ts === ts);
  }

  /** Stores a user's message as Slack would before sending its event. */
  userMessage(channel: string, user: string, text: string, threadTs?: string): SlackMessage {
    const message: SlackMessage = {
      channel,
      ts: this.nextTs(),
      text,
      user,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      reactions: new Map(),
    };
    this.messages.push(message);
    return message;
  }

  /** The Web API methods this workspace implements, by name. */
  methods(): Record<string, (p: Params) => Answer> {
    return {
      "auth.test": () => this.#authTest(),
      "chat.postMessage": (p) => this.#postMessage(p),
      "files.getUploadURLExternal": (p) => this.#uploadUrl(p),
      "files.completeUploadExternal": (p) => this.#completeUpload(p),
      "chat.update": (p) => this.#update(p),
      "chat.delete": (p) => this.#delete(p),
      "reactions.add": (p) => this.#react(p, true),
      "reactions.remove": (p) => this.#react(p, false),
      "conversations.history": (p) => this.#history(p, false),
      "conversations.replies": (p) => this.#history(p, true),
      "conversations.info": (p) => this.#conversationInfo(p),
      "users.info": (p) => this.#userInfo(p),
      "assistant.threads.setStatus": (p) =>
        str(p.channel_id) && str(p.thread_ts) && typeof p.status === "string"
          ? ok()
          : fail("invalid_arguments"),
    };
  }

  #view(m: SlackMessage, withMetadata: boolean): Record<string, unknown> {
    return {
      type: "message",
      ts: m.ts,
      text: m.text,
      user: m.user,
      ...(m.bot_id ? { bot_id: m.bot_id, app_id: this.ids.appId } : {}),
      ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}),
      ...(withMetadata && m.metadata ? { metadata: m.metadata } : {}),
      ...(m.files ? { files: m.files.map((f) => this.#fileView(f)) } : {}),
    };
  }

  #fileView(f: SlackFile): Record<string, unknown> {
    return { id: f.id, name: f.name, title: f.title, size: f.size, mode: "hosted" };
  }

  #uploadUrl(p: Params): Answer {
    const filename = str(p.filename);
    const length = Number(str(p.length) ?? p.length);
    if (!filename) return fail("invalid_arguments");
    if (!Number.isInteger(length) || length <= 0) return fail("invalid_arguments");
    const id = `F${String(this.files.size + 1).padStart(9, "0")}`;
    this.files.set(id, { id, name: filename, title: filename, size: length });
    return ok({ upload_url: `${this.uploadBase()}/upload/v1/${id}`, file_id: id });
  }

  // Shares uploaded files in one conversation as one bot message (initial_comment as its text).
  #completeUpload(p: Params): Answer {
    const listed = jsonParam(p.files);
    if (!Array.isArray(listed) || listed.length === 0) return fail("invalid_arguments");
    const files: SlackFile[] = [];
    for (const entry of listed as Array<{ id?: unknown; title?: unknown }>) {
      const file = this.files.get(String(entry.id));
      if (!file) return fail("file_not_found");
      if (file.data === undefined || file.data.length !== file.size) return fail("file_upload_size_mismatch");
      if (typeof entry.title === "string" && entry.title) file.title = entry.title;
      files.push(file);
    }
    const channel = str(p.channel_id);
    if (!channel) return ok({ files: files.map((f) => this.#fileView(f)) });
    const threadTs = str(p.thread_ts);
    const message: SlackMessage = {
      channel,
      ts: this.nextTs(),
      text: typeof p.initial_comment === "string" ? p.initial_comment : "",
      user: this.ids.botUserId,
      bot_id: this.ids.botId,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      reactions: new Map(),
      files,
    };
    this.messages.push(message);
    // Slack often reports shares later than the answer; the fake reports none, like a fresh upload.
    return ok({ files: files.map((f) => this.#fileView(f)) });
  }

  #authTest(): Answer {
    return ok({
      url: "https://hub-test.slack.com/",
      team: "Hub Test",
      user: "hubbot",
      team_id: this.ids.teamId,
      user_id: this.ids.botUserId,
      bot_id: this.ids.botId,
      is_enterprise_install: false,
    });
  }

  #postMessage(p: Params): Answer {
    const channel = str(p.channel);
    if (!channel) return fail("channel_not_found");
    const text = typeof p.text === "string" ? p.text : "";
    if (text.trim() === "" && p.blocks === undefined) return fail("no_text");
    if (text.length > 40_000) return fail("msg_too_long");
    const metadata = jsonParam(p.metadata) as SlackMessage["metadata"] | undefined;
    const threadTs = str(p.thread_ts);
    const message: SlackMessage = {
      channel,
      ts: this.nextTs(),
      text,
      user: this.ids.botUserId,
      bot_id: this.ids.botId,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      ...(metadata?.event_type ? { metadata } : {}),
      reactions: new Map(),
    };
    this.messages.push(message);
    return ok({ channel, ts: message.ts, message: this.#view(message, true) });
  }

  // chat.update: only the bot's own messages; the text is checked like a post.
  #update(p: Params): Answer {
    const [channel, ts] = [str(p.channel), str(p.ts)];
    if (!channel) return fail("channel_not_found");
    const message = ts ? this.find(channel, ts) : undefined;
    if (!message) return fail("message_not_found");
    if (message.bot_id !== this.ids.botId) return fail("cant_update_message");
    const text = typeof p.text === "string" ? p.text : "";
    if (text.trim() === "" && p.blocks === undefined) return fail("no_text");
    if (text.length > 40_000) return fail("msg_too_long");
    message.text = text;
    message.edits = (message.edits ?? 0) + 1;
    return ok({ channel, ts: message.ts, text, message: this.#view(message, false) });
  }

  // chat.delete: a deleted message is gone from the conversation.
  #delete(p: Params): Answer {
    const [channel, ts] = [str(p.channel), str(p.ts)];
    if (!channel) return fail("channel_not_found");
    const message = ts ? this.find(channel, ts) : undefined;
    if (!message) return fail("message_not_found");
    if (message.bot_id !== this.ids.botId) return fail("cant_delete_message");
    this.messages.splice(this.messages.indexOf(message), 1);
    return ok({ channel, ts: message.ts });
  }

  #react(p: Params, add: boolean): Answer {
    const [channel, ts, name] = [str(p.channel), str(p.timestamp), str(p.name)];
    if (!channel || !ts || !name) return fail("invalid_arguments");
    const message = this.find(channel, ts);
    if (!message) return fail("message_not_found");
    const users = message.reactions.get(name) ?? new Set<string>();
    const me = this.ids.botUserId;
    if (add && users.has(me)) return fail("already_reacted");
    if (!add && !users.has(me)) return fail("no_reaction");
    if (add) users.add(me);
    else users.delete(me);
    if (users.size === 0) message.reactions.delete(name);
    else message.reactions.set(name, users);
    return ok();
  }

  #history(p: Params, thread: boolean): Answer {
    const channel = str(p.channel);
    if (!channel) return fail("channel_not_found");
    const oldest = Number(str(p.oldest) ?? "0");
    const parent = str(p.ts);
    if (thread && !parent) return fail("thread_not_found");
    const withMetadata = truthy(p.include_all_metadata);
    const inChannel = this.messages.filter((m) => m.channel === channel && Number(m.ts) >= oldest);
    const picked = thread
      ? inChannel.filter((m) => m.ts === parent || m.thread_ts === parent)
      : inChannel.filter((m) => !m.thread_ts || m.thread_ts === m.ts).reverse();
    return ok({ messages: picked.map((m) => this.#view(m, withMetadata)), has_more: false });
  }

  #conversationInfo(p: Params): Answer {
    const id = str(p.channel);
    if (!id) return fail("channel_not_found");
    const im = id.startsWith("D");
    return ok({
      channel: { id, name: im ? undefined : `chan-${id.toLowerCase()}`, is_im: im, is_channel: !im },
    });
  }

  #userInfo(p: Params): Answer {
    const id = str(p.user);
    if (!id) return fail("user_not_found");
    const profile = { display_name: `User ${id}` };
    return ok({
      user: {
        id,
        team_id: this.ids.teamId,
        name: `user-${id.toLowerCase()}`,
        real_name: `User ${id}`,
        is_bot: false,
        profile,
      },
    });
  }
}
