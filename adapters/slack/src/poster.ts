import type { AdapterStateStore, HubLogger, OutboundAttachment } from "@hub/core";
import { PermanentSendError, RateLimitedError, retryAfterMs } from "@hub/core";
import { WebAPIHTTPError, WebAPIPlatformError, WebAPIRateLimitedError, type WebClient } from "@slack/web-api";
import { z } from "zod";
import { completeUpload, uploadFileBytes } from "./file-upload.js";

/** The metadata event type our messages carry, so an uncertain post can be found again. */
export const SEGMENT_EVENT_TYPE = "hub_reply_segment";

/** Slack errors after which the message may exist anyway ("some aspect of the operation succeeded"). */
const MAYBE_POSTED = new Set(["internal_error", "fatal_error", "service_unavailable"]);
/** Refusals of every message to the channel (not of this one): nothing sent in a message's place arrives. */
const CHAT_REFUSES = new Set([
  "channel_not_found",
  "not_in_channel",
  "is_archived",
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "token_expired",
  "missing_scope",
  "restricted_action",
  "team_access_not_granted",
]);

/** Refusals of the bot token itself: every call of the account fails until it has a valid one. */
const TOKEN_REFUSED = new Set([
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "token_expired",
]);

/** The Slack error code when `error` (a Web API error, or the delivery error made of one) refuses the bot token. */
export function refusedTokenCode(error: unknown): string | undefined {
  const platform =
    error instanceof WebAPIPlatformError ? error : (error as { cause?: unknown } | null)?.cause;
  if (!(platform instanceof WebAPIPlatformError)) return undefined;
  const code = String(platform.data.error);
  return TOKEN_REFUSED.has(code) ? code : undefined;
}

/** Slack errors that will never go away by retrying the same message. */
const PERMANENT = new Set([
  ...CHAT_REFUSES,
  "msg_too_long",
  "no_text",
  "cannot_reply_to_message",
  "invalid_blocks",
  "invalid_metadata_format",
  // chat.update / chat.delete of a live preview that is gone or no longer ours to change.
  "message_not_found",
  "cant_update_message",
  "edit_window_closed",
]);

const PostedSchema = z.looseObject({ ts: z.string() });
const HistorySchema = z.looseObject({
  messages: z
    .array(
      z.looseObject({
        ts: z.string(),
        bot_id: z.string().optional(),
        user: z.string().optional(),
        files: z.array(z.looseObject({ id: z.string() })).optional(),
        metadata: z
          .looseObject({
            event_type: z.string(),
            event_payload: z.record(z.string(), z.unknown()).optional(),
          })
          .optional(),
      }),
    )
    .default([]),
});

/** One segment to post. */
export interface PostRequest {
  channel: string;
  threadTs?: string | undefined;
  text: string;
  replyId: string;
  index: number;
  /** A file this segment shares (`text` is then its caption). */
  file?: OutboundAttachment | undefined;
}

/** What the poster needs. */
export interface SlackPosterOptions {
  client: WebClient;
  state: AdapterStateStore;
  accountId: string;
  logger: HubLogger;
  /** The bot's user id (messages it posted carry it). */
  botUserId: () => string | undefined;
  /** How long after an uncertain attempt Slack may still create the message; we look only after it. */
  settleMs: number;
}

/** The last post to one reply target, as the account's shared state keeps it. */
const AttemptSchema = z.object({
  replyId: z.string(),
  index: z.number(),
  since: z.number(),
  state: z.enum(["posting", "done", "failed"]),
  ts: z.string().optional(),
  /** A file segment: the uploaded file being shared (found again by its id in the conversation). */
  fileId: z.string().optional(),
});
type Attempt = z.infer<typeof AttemptSchema>;

/**
 * Posts reply segments so that a segment is never posted twice by us. The Web API client never
 * retries (retries are the ReplyDispatcher's), and every message carries its segment identity
 * in `metadata`. Before a post, the reply target's record in the account's shared state says
 * `posting` (one small key per chat/thread, overwritten by its next post, since one target is
 * delivered by one worker at a time); after a clear answer it says `done` (with the ts) or
 * `failed`. A retry that finds its own segment still `posting` (a timeout, a network error, a
 * 5xx, `internal_error`, or a process killed mid-post) first waits for that attempt to settle,
 * then looks the segment up in the conversation and returns the message it finds instead of
 * posting again; one that finds it `done` returns the recorded ts.
 */
export class SlackPoster {
  readonly #o: SlackPosterOptions;

  constructor(options: SlackPosterOptions) {
    this.#o = options;
  }

  #key(r: PostRequest): string {
    return `slack:${this.#o.accountId}:posting:${r.channel}:${r.threadTs ?? "-"}`;
  }

  async #attempt(key: string): Promise<Attempt | undefined> {
    const raw = await this.#o.state.get(key);
    if (!raw) return undefined;
    try {
      return AttemptSchema.parse(JSON.parse(raw));
    } catch {
      return undefined;
    }
  }

  async #record(key: string, attempt: Attempt): Promise<void> {
    await this.#o.state.set(key, JSON.stringify(attempt));
  }

  /** Posts one segment (or finds it from an uncertain earlier attempt); returns its `ts`. */
  async post(r: PostRequest): Promise<string> {
    if (r.file) return this.#postFile(r, r.file);
    const key = this.#key(r);
    const last = await this.#attempt(key);
    if (last && last.replyId === r.replyId && last.index === r.index) {
      if (last.state === "done" && last.ts) return last.ts;
      if (last.state === "posting") {
        const found = await this.#settle(r, last);
        if (found) {
          await this.#record(key, { ...last, state: "done", ts: found });
          return found;
        }
      }
    }
    const attempt: Attempt = { replyId: r.replyId, index: r.index, since: Date.now(), state: "posting" };
    await this.#record(key, attempt);
    try {
      const answer = await this.#o.client.chat.postMessage({
        channel: r.channel,
        text: r.text,
        ...(r.threadTs ? { thread_ts: r.threadTs } : {}),
        unfurl_links: false,
        unfurl_media: false,
        metadata: {
          event_type: SEGMENT_EVENT_TYPE,
          event_payload: { reply_id: r.replyId, index: r.index },
        },
      });
      const ts = PostedSchema.parse(answer).ts;
      await this.#record(key, { ...attempt, state: "done", ts });
      return ts;
    } catch (error) {
      // Slack said no (or 429): nothing was posted, the next attempt posts at once.
      if (!maybePosted(error)) await this.#record(key, { ...attempt, state: "failed" });
      throw classifySlackError(error);
    }
  }

  /**
   * A file segment, the same way as text: the bytes are uploaded first (invisible until shared),
   * the attempt is recorded as `posting` with the file id, then the share is completed. A retry
   * that finds its own segment still `posting` looks in the conversation for a message carrying
   * that file id and returns it instead of sharing again (Slack's file API takes no metadata).
   */
  async #postFile(r: PostRequest, file: OutboundAttachment): Promise<string> {
    const key = this.#key(r);
    const last = await this.#attempt(key);
    if (last && last.replyId === r.replyId && last.index === r.index && last.fileId) {
      if (last.state === "done") return last.ts ?? "";
      if (last.state === "posting") {
        const found = await this.#settle(r, last);
        if (found) {
          await this.#record(key, { ...last, state: "done", ts: found });
          return found;
        }
      }
    }
    let attempt: Attempt | undefined;
    try {
      const fileId = await uploadFileBytes(this.#o.client, file);
      attempt = { replyId: r.replyId, index: r.index, since: Date.now(), state: "posting", fileId };
      await this.#record(key, attempt);
      const { channel, threadTs, text: caption } = r;
      const ts = await completeUpload(this.#o.client, {
        channel,
        threadTs,
        caption,
        fileId,
        title: file.filename,
      });
      await this.#record(key, { ...attempt, state: "done", ...(ts ? { ts } : {}) });
      return ts ?? "";
    } catch (error) {
      if (attempt && !maybePosted(error)) await this.#record(key, { ...attempt, state: "failed" });
      throw classifySlackError(error);
    }
  }

  /** After an uncertain attempt: waits until it has settled (delaying the target), then looks for it. */
  async #settle(r: PostRequest, last: Attempt): Promise<string | undefined> {
    const wait = last.since + this.#o.settleMs - Date.now();
    if (wait > 0) throw new RateLimitedError(wait, "an earlier attempt of this segment may still land");
    const found = await this.#find(r, last.since, last.fileId);
    if (found) {
      this.#o.logger.info(
        { replyId: r.replyId, index: r.index, ts: found },
        "slack: an uncertain earlier attempt had posted the segment; not posting it again",
      );
    }
    return found;
  }

  /** Looks for our message carrying this segment's identity, posted since `since` (ms). */
  async #find(r: PostRequest, since: number, fileId?: string): Promise<string | undefined> {
    const oldest = String(Math.floor(since / 1000) - 300);
    const common = { channel: r.channel, oldest, include_all_metadata: true, limit: 200 };
    const page = r.threadTs
      ? await this.#o.client.conversations.replies({ ...common, ts: r.threadTs })
      : await this.#o.client.conversations.history(common);
    const messages = HistorySchema.parse(page).messages;
    const me = this.#o.botUserId();
    const mine = messages.find(
      (m) =>
        (fileId
          ? m.files?.some((f) => f.id === fileId) === true
          : m.metadata?.event_type === SEGMENT_EVENT_TYPE &&
            m.metadata.event_payload?.reply_id === r.replyId &&
            m.metadata.event_payload?.index === r.index) &&
        (me === undefined || m.user === me || m.bot_id !== undefined),
    );
    return mine?.ts;
  }
}

/** Whether Slack may have created the message although the call failed. */
function maybePosted(error: unknown): boolean {
  if (error instanceof WebAPIRateLimitedError) return false;
  if (error instanceof WebAPIPlatformError) return MAYBE_POSTED.has(String(error.data.error));
  if (error instanceof WebAPIHTTPError) return error.statusCode >= 500;
  // Network errors, timeouts and aborts: the request may have reached Slack.
  return true;
}

/** Maps a Web API failure to the hub's delivery errors: 429 delays the target, refusals fail the segment. */
export function classifySlackError(error: unknown): unknown {
  if (error instanceof WebAPIRateLimitedError) return new RateLimitedError(retryAfterMs(error.retryAfter));
  if (error instanceof WebAPIPlatformError) {
    const code = String(error.data.error);
    if (PERMANENT.has(code))
      return new PermanentSendError(`Slack refused the message: ${code}`, {
        cause: error,
        chatRefuses: CHAT_REFUSES.has(code),
      });
    return new Error(`Slack answered ${code}`, { cause: error });
  }
  return error;
}
