import type {
  ChannelCapabilities,
  OutboxFile,
  PushNote,
  ReplyOpenOptions,
  ReplyPushOptions,
  ReplySettlement,
  ReplyStream,
  ReplyTarget,
  StopSignal,
} from "@hub/core";
import { groupEndId } from "@hub/queue";
import { MAX_CAPTION_CHARS } from "./attachments.js";
import { chunkForChannel } from "./fit.js";
import { previewText } from "./preview.js";
import type { SegmentItem } from "./segment-item.js";

/** A wait for a reply's settlement, registered before the step that may settle it. */
export interface SettleWaiter {
  /** Resolves with the counts the settling step announced. */
  woke: Promise<ReplySettlement>;
  cancel(): void;
}

/** One item of a reply's target mailbox. */
type QueuedItem = { id: string; data: SegmentItem };

/** What an open reply needs from its dispatcher. */
export interface OpenReplyDeps {
  capabilities: Pick<ChannelCapabilities, "textLimit" | "measure">;
  /** Queues items to the reply target's mailbox, in order. */
  /** Resolves false when a reply opened `once` was queued before (nothing queued this time). */
  push(
    items: QueuedItem[],
    options: { fence?: ReplyOpenOptions["fence"]; note?: PushNote },
  ): Promise<boolean>;
  /** Queues a live preview's newest text. */
  pushPreview(id: string, item: Omit<SegmentItem, "kind"> & { preview: string }): Promise<void>;
  /** Registers a wait for the reply's settlement (before the step that may settle it). */
  waiter(): Promise<SettleWaiter>;
  /** The settlement, from a registered wait (or from Redis if its announcement was missed). */
  until: (waiter: SettleWaiter, signal?: StopSignal) => Promise<ReplySettlement>;
  /** The settlement of a reply whose end this stream did not queue. */
  settled: (signal?: StopSignal) => Promise<ReplySettlement>;
}

/**
 * One reply being produced (see `ReplyDispatcher.open`): blocks are chunked to the channel's limit and
 * queued as segments `<replyId>#<index>`. The reply's last item names its total (`groupEndId`), so the
 * ack of that item settles the reply: the last block's push (`last`), else the close of its live
 * preview or an end marker that is not sent, queued by `end`.
 */
export class OpenReply implements ReplyStream {
  #next = 0;
  #previews = 0;
  #ended = false;
  #repeated = false;
  // Once the reply's last item is queued: the wait for its settlement.
  #settlement: SettleWaiter | undefined;
  readonly #preview: string | undefined;

  constructor(
    readonly replyId: string,
    private readonly target: ReplyTarget,
    private readonly options: ReplyOpenOptions,
    private readonly deps: OpenReplyDeps,
  ) {
    this.#preview = options.preview?.key;
    if (this.#preview !== undefined) this.preview = (text) => this.#showPreview(text);
  }

  /** Shows the answer so far as the live preview (only on a reply opened with one). */
  readonly preview?: (text: string) => Promise<void>;

  async push(block: string, note?: PushNote, options?: ReplyPushOptions): Promise<void> {
    if (this.#ended) throw new Error(`reply ${this.replyId} already ended`);
    const items = chunkForChannel(block, this.deps.capabilities).map((text, i) => ({
      id: `${this.replyId}#${this.#next + i}`,
      data: this.#segment(this.#next + i, { text }),
    }));
    // A last block that chunks to nothing leaves the end to `end`.
    const last = options?.last === true && items.length > 0;
    await this.#queue(items, { fence: this.options.fence, ...(note ? { note } : {}) }, last);
  }

  async pushFile(file: OutboxFile, caption = ""): Promise<void> {
    if (this.#ended) throw new Error(`reply ${this.replyId} already ended`);
    // A caption too long to go with the file goes first, as its own text.
    const long = caption.length > MAX_CAPTION_CHARS;
    const segments: Array<Pick<SegmentItem, "text" | "attachment">> = [
      ...(long ? chunkForChannel(caption, this.deps.capabilities).map((text) => ({ text })) : []),
      { text: long ? "" : caption, attachment: file },
    ];
    const { replyId, target } = this;
    const items = segments.map((segment, i) => {
      const index = this.#next + i;
      return { id: `${replyId}#${index}`, data: { replyId, index, ...segment, target, at: Date.now() } };
    });
    await this.#queue(items, { fence: this.options.fence }, false);
  }

  get ended(): boolean {
    return this.#settlement !== undefined || this.#repeated;
  }

  get repeated(): boolean {
    return this.#repeated;
  }

  async end(): Promise<number> {
    // Ended already by the push of its last block.
    if (this.#settlement || this.#repeated) return this.#next;
    this.#ended = true;
    // Not fenced, so a superseded run (whose pushes are refused) still clears what it showed and settles.
    await this.#queue([], {}, true);
    return this.#next;
  }

  async settled(signal?: StopSignal): Promise<ReplySettlement> {
    return this.#settlement ? this.deps.until(this.#settlement, signal) : this.deps.settled(signal);
  }

  async #showPreview(text: string): Promise<void> {
    const preview = this.#preview;
    if (this.#ended || preview === undefined) return;
    const shown = previewText(text, this.deps.capabilities);
    if (shown === "") return;
    const item = {
      replyId: this.replyId,
      // The segment this preview becomes when taken over: the answer's first message only at 0.
      index: this.#next,
      text: shown,
      target: this.target,
      at: Date.now(),
      preview,
    };
    await this.deps.pushPreview(`${this.replyId}#p${this.#previews++}`, item);
  }

  #segment(index: number, data: Omit<SegmentItem, "replyId" | "index" | "target" | "at">): SegmentItem {
    const { replyId, target, options } = this;
    const item: SegmentItem = { replyId, index, ...data, target, at: Date.now() };
    if (options.runId && options.runId !== replyId) item.runId = options.runId;
    if (options.sessionKey) item.sessionKey = options.sessionKey;
    if (this.#preview && data.kind === undefined) item.preview = this.#preview;
    return item;
  }

  // Queues items; with `last`, they end the reply, and the wait for its settlement starts before the step
  // that may settle it.
  async #queue(
    items: QueuedItem[],
    push: { fence?: ReplyOpenOptions["fence"]; note?: PushNote },
    last: boolean,
  ): Promise<void> {
    if (this.options.once && !last)
      throw new Error(`reply ${this.replyId} is queued once: in one push, its last`);
    const waiter = last ? await this.deps.waiter() : undefined;
    const total = this.#next + items.length;
    let queued: boolean;
    try {
      queued = await this.deps.push(last ? this.#lastItems(total, items) : items, push);
    } catch (error) {
      waiter?.cancel();
      throw error;
    }
    if (!queued) {
      // Queued by an earlier attempt: its settlement is read from Redis (`settled`).
      waiter?.cancel();
      this.#ended = true;
      this.#repeated = true;
      return;
    }
    // Counted only once queued: a failed push must not leave the reply waiting for segments that never existed.
    this.#next = total;
    if (waiter) {
      this.#ended = true;
      this.#settlement = waiter;
    }
  }

  // The reply's last item ends its group (see OrderedMailbox's groups): the close of its live preview (a
  // preview none of the segments took over is removed), or its last segment, or (nothing else to carry
  // it) an end marker that is not sent.
  #lastItems(total: number, segments: QueuedItem[]): QueuedItem[] {
    const { replyId, target } = this;
    if (this.#preview !== undefined && (this.#previews > 0 || this.options.preview?.resumed === true)) {
      const data: SegmentItem = {
        replyId,
        index: 0,
        text: "",
        target,
        preview: this.#preview,
        kind: "close",
      };
      return [...segments, { id: groupEndId(replyId, "close", total), data }];
    }
    const last = segments.at(-1);
    if (last) return [...segments.slice(0, -1), { ...last, id: groupEndId(replyId, last.data.index, total) }];
    return [{ id: groupEndId(replyId, "end", total), data: this.#segment(total, { text: "", kind: "end" }) }];
  }
}
