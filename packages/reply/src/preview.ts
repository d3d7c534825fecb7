import {
  type ChannelAdapter,
  type ChannelCapabilities,
  type HubLogger,
  type OutboundSegment,
  PermanentSendError,
  RateLimitedError,
  type ReplyTarget,
  ReplyTargetSchema,
  type SendResult,
} from "@hub/core";
import type { Redis } from "ioredis";
import { chunkForChannel } from "./fit.js";

/** Keeps a run's preview record this long after its last write. */
const PREVIEW_TTL_SECONDS = 24 * 3600;

/** Shown after a preview's text, so a reader can tell the answer is still being written. */
export const PREVIEW_MARK = " …";

/**
 * The text a preview shows: the start of the answer so far that fits one message, with the mark
 * that says it is still being written.
 */
export function previewText(
  text: string,
  capabilities: Pick<ChannelCapabilities, "textLimit" | "measure">,
): string {
  const [first] = chunkForChannel(text, {
    textLimit: capabilities.textLimit - PREVIEW_MARK.length,
    ...(capabilities.measure ? { measure: capabilities.measure } : {}),
  });
  return first === undefined || first === "" ? "" : `${first}${PREVIEW_MARK}`;
}

/** What delivering a preview item needs from the dispatcher: the send path and pacing. */
export interface PreviewIo {
  adapter: ChannelAdapter;
  target: ReplyTarget;
  signal: AbortSignal;
  /** Waits for the target's pacing and checks the lease; called right before each platform write. */
  gate(): Promise<void>;
  /** Sends a new message through the dispatcher's bounded send (timeouts, unknown outcomes). */
  send(segment: OutboundSegment): Promise<SendResult>;
  /** Where a preview the platform refuses to edit is said (with the run's log fields). */
  log: HubLogger;
  /**
   * This is the segment's last try at editing the preview: an edit that fails again, however, is given up
   * as refused (the preview deleted) and the segment sent as a new message with the tries left, so an edit
   * that keeps failing (Slack's `fatal_error` on every `chat.update`) cannot use up the segment's tries.
   */
  lastEditTry?: boolean;
}

/**
 * The live previews of runs, in Redis: per run (`key`, its runId), the id of the message that shows the
 * answer so far, the text it shows, and how many previews the run's segments have taken over.
 *
 * Every preview write is an item of the reply target's ordered mailbox, like the segments, so a preview
 * is created, edited, taken over by the next segment (edited into it) or deleted strictly in reply order,
 * by one drainer at a time: no edit can land after the segment that finalized it. The message id is
 * durable, so a restarted delivery (or a resumed attempt of the run) finalizes the preview a crashed one
 * left instead of leaving it stuck.
 */
export class LivePreviews {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  #key(key: string): string {
    return `${this.prefix}:preview:${key}`;
  }

  /** Records that `itemId` carries the newest text of the preview (older queued ones are skipped). */
  async markLatest(key: string, itemId: string): Promise<void> {
    await this.redis.set(`${this.#key(key)}:latest`, itemId, "EX", PREVIEW_TTL_SECONDS);
  }

  /**
   * Shows a preview item's text in the run's preview message: edits it, or sends it when the run has none
   * live. The item's index is the segment it previews, so a new preview message is the answer's first (a
   * reply to the user's message, a Discord interaction's original response) only when it previews segment 0.
   */
  async show(
    key: string,
    itemId: string,
    item: Pick<OutboundSegment, "replyId" | "index" | "text">,
    io: PreviewIo,
  ): Promise<void> {
    const { replyId, text } = item;
    const k = this.#key(key);
    // A newer text is queued behind this one: showing this one would only cost a platform call.
    if ((await this.redis.get(`${k}:latest`)) !== itemId) return;
    const state = await this.redis.hgetall(k);
    // The platform refused to edit this run's preview: the segments come as messages of their own.
    if (state.refused) return;
    if (state.messageId) {
      if (state.text === text || !io.adapter.edit) return;
      await io.gate();
      try {
        await io.adapter.edit(state.messageId, { replyId, index: 0, text }, io.target, { signal: io.signal });
      } catch (error) {
        if (error instanceof PermanentSendError) return this.#editRefused(k, state.messageId, error, io);
        throw error;
      }
      await this.redis.multi().hset(k, "text", text).expire(k, PREVIEW_TTL_SECONDS).exec();
      return;
    }
    await io.gate();
    // A stable identity per preview message (its generation in the reply id: a resumed attempt's previews
    // start at segment 0 again): a resend after a crash finds the same message where the platform
    // de-duplicates (Discord's nonce, Slack's metadata lookup).
    const sent = await io.send({
      replyId: `${key}.preview.${Number(state.gen ?? 0)}`,
      index: item.index,
      text,
    });
    if (sent.messageId === undefined) return;
    await this.redis
      .multi()
      .hset(k, { messageId: sent.messageId, text, target: JSON.stringify(io.target) })
      .expire(k, PREVIEW_TTL_SECONDS)
      .exec();
  }

  /**
   * Delivers a segment of the run's reply by editing the live preview into it, when there is one.
   * Returns false when the segment must be sent as a new message (no preview, or it was deleted).
   * A retry after a crash between the edit and the checkpoint sees the segment recorded as delivered.
   */
  async takeOver(key: string, segment: OutboundSegment, io: PreviewIo): Promise<boolean> {
    const k = this.#key(key);
    const segmentId = `${segment.replyId}#${segment.index}`;
    const state = await this.redis.hgetall(k);
    if (state.finalizedBy === segmentId) return true;
    if (!state.messageId || !io.adapter.edit) return false;
    try {
      await io.adapter.edit(state.messageId, segment, io.target, { signal: io.signal });
    } catch (error) {
      // Told to wait (a 429) is no failure of the edit: it is tried again after the wait, whatever the try.
      if (error instanceof RateLimitedError) throw error;
      if (!(error instanceof PermanentSendError) && !io.lastEditTry) throw error;
      await this.#editRefused(k, state.messageId, error, io);
      return false;
    }
    await this.redis
      .multi()
      .hdel(k, "messageId", "text")
      .hset(k, "finalizedBy", segmentId)
      .hincrby(k, "gen", 1)
      .expire(k, PREVIEW_TTL_SECONDS)
      .exec();
    return true;
  }

  /**
   * An edit of the preview refused for good (or failing on its last try: see `lastEditTry`). Either the preview is gone (deleted by someone: the next
   * preview or segment starts a new message), or the platform keeps it and will not edit it (Slack's
   * `cant_update_message`, an edit window closed): it is deleted, so no half answer stays on screen above
   * the segments sent as new messages, and the run previews no more.
   */
  async #editRefused(k: string, messageId: string, error: unknown, io: PreviewIo): Promise<void> {
    if (io.adapter.deleteMessage) await io.gate();
    const deleted = io.adapter.deleteMessage
      ? await io.adapter.deleteMessage(io.target, messageId).then(
          () => true,
          () => false,
        )
      : false;
    if (deleted)
      io.log.warn(
        { err: error instanceof Error ? error.message : String(error) },
        "the platform refused to edit the live preview; deleted it, the answer follows as messages of its own",
      );
    const multi = this.redis.multi().hdel(k, "messageId", "text");
    if (deleted) multi.hset(k, "refused", "1");
    await multi.expire(k, PREVIEW_TTL_SECONDS).exec();
  }

  /**
   * Where the run's preview message is, when it has one no segment took over: what a run that ends
   * without its reply (interrupted, not resumed) left on screen.
   */
  async leftAt(key: string): Promise<ReplyTarget | undefined> {
    const [messageId, target] = await this.redis.hmget(this.#key(key), "messageId", "target");
    if (!messageId || !target) return undefined;
    try {
      return ReplyTargetSchema.parse(JSON.parse(target));
    } catch {
      return undefined; // not written by this code: nothing known to close
    }
  }

  /** True when the run has a preview message no segment took over. */
  async isLive(key: string): Promise<boolean> {
    return (await this.redis.hexists(this.#key(key), "messageId")) === 1;
  }

  /**
   * Ends the run's previews: a preview no segment took over (the run stopped, was superseded, or ended
   * with nothing more to say) is deleted, so no half answer stays on screen.
   */
  async close(key: string, io: PreviewIo): Promise<void> {
    const k = this.#key(key);
    const messageId = await this.redis.hget(k, "messageId");
    if (messageId) {
      await io.gate();
      if (io.adapter.deleteMessage) await io.adapter.deleteMessage(io.target, messageId);
    }
    await this.redis.del(k, `${k}:latest`);
  }
}
