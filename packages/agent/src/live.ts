import type { HubLogger, MsgContext } from "@hub/core";
import type { BlockStreamer } from "@hub/reply";
import type { OrderedBlockPusher } from "./block-pusher.js";

/**
 * What a chat shows while a run works, decided per message from the channel's config and what its
 * adapter can do (wired by the hub app).
 */
export interface LiveFeatures {
  /** Whether answers in this chat stream as a live preview (`streaming: "preview"`, and the channel can edit). */
  previewFor(ctx: MsgContext): boolean;
  /** The reaction that acknowledges this message while its run works, or undefined (off, a group, no reactions). */
  ackReactionFor(ctx: MsgContext): string | undefined;
  /**
   * Sets (`emoji`) or removes (`null`) the bot's reaction on the message; `previous` names the reaction to
   * remove when this process did not set it (see `ChannelAdapter.react`).
   */
  react(message: ReactedMessage, emoji: string | null, previous?: string): Promise<void>;
  /**
   * Where a reaction that is on a message is remembered until it is removed, so one a crash left behind
   * (the run ended, its answer was still being delivered) is removed after the restart.
   */
  ledger?: AckLedger;
  /** Least time between two preview updates of one answer (default 1000 ms). */
  previewIntervalMs?: number;
}

/** The message a reaction is on: what removing it takes, also in another process after a crash. */
export type ReactedMessage = Pick<MsgContext, "channel" | "accountId" | "replyTarget" | "messageId">;

// The message `ctx` answers, as its reaction needs it (only these fields: it is remembered in Redis).
function reactedMessageOf(ctx: MsgContext): ReactedMessage {
  return {
    channel: ctx.channel,
    accountId: ctx.accountId,
    replyTarget: ctx.replyTarget,
    messageId: ctx.messageId,
  };
}

/** Acknowledgement reactions on messages, by the run that answers them, until each is removed. */
export interface AckLedger {
  remember(runId: string, message: ReactedMessage, emoji: string): Promise<void>;
  forget(runId: string): Promise<void>;
}

/**
 * Takes off the acknowledgement reaction of a run that ends without a turn of its own (finalized: its
 * attempts were interrupted), which no attempt lives to take off, and forgets it.
 */
export async function unacknowledgeFinalized(
  live: LiveFeatures | undefined,
  ctx: MsgContext,
  log: HubLogger,
  runId: string,
): Promise<void> {
  const emoji = live?.ackReactionFor(ctx);
  if (!live || emoji === undefined) return;
  const message = reactedMessageOf(ctx);
  try {
    await live.react(message, null, emoji);
    await live.ledger?.forget(runId);
  } catch (error) {
    // Still in the ledger: the next start takes it off.
    log.warn(
      { err: error, messageId: ctx.messageId, emoji },
      "acknowledgement reaction could not be removed",
    );
  }
}

/**
 * Feeds a run's live preview: on each streamed delta, at most once per interval, the text not yet pushed
 * as blocks is queued as the preview, in order with the blocks. Driven by deltas only (no timer), so once
 * the run pushes its last block no preview can follow it. The first preview waits one interval after the
 * first delta: a quick answer is sent as is, without a preview.
 */
export class LivePreviewFeed {
  #last: number | undefined;
  #shown = "";

  constructor(
    private readonly pusher: OrderedBlockPusher,
    private readonly streamer: BlockStreamer,
    private readonly intervalMs: number,
  ) {}

  /** Called after each delta was given to the streamer. */
  update(): void {
    const now = Date.now();
    if (this.#last === undefined) {
      this.#last = now;
      return;
    }
    if (now - this.#last < this.intervalMs) return;
    const text = this.streamer.pending();
    if (text === "" || text === this.#shown) return;
    this.#last = now;
    this.#shown = text;
    this.pusher.pushPreview(text);
  }
}

/**
 * Puts the acknowledgement reaction on the message a run answers (without delaying the run) and returns
 * what removes it (once, however often it is called), or undefined when the message gets no reaction. The
 * runner removes it once the run's answer is delivered, whatever way the run ended. A reaction the
 * platform refuses is logged and never fails the run.
 */
export function acknowledge(
  live: LiveFeatures | undefined,
  ctx: MsgContext,
  log: HubLogger,
  runId: string,
): (() => Promise<void>) | undefined {
  const emoji = live?.ackReactionFor(ctx);
  if (!live || emoji === undefined) return undefined;
  // A warning: a refused reaction (an emoji the platform does not offer) fails on every message until fixed.
  const failed = (what: string) => (error: unknown) =>
    log.warn(
      { err: error, messageId: ctx.messageId, emoji },
      `acknowledgement reaction could not be ${what}`,
    );
  const message = reactedMessageOf(ctx);
  // Remembered before it is put on, so a crash at any point after leaves it to be removed.
  const adding = (async () => {
    await live.ledger?.remember(runId, message, emoji).catch(failed("remembered"));
    return live.react(message, emoji).then(
      () => true,
      (error) => {
        failed("added")(error);
        return false;
      },
    );
  })();
  let removing: Promise<void> | undefined;
  return () => {
    removing ??= adding.then(async (added) => {
      if (added) await live.react(message, null).catch(failed("removed"));
      await live.ledger?.forget(runId).catch(failed("forgotten"));
    });
    return removing;
  };
}
