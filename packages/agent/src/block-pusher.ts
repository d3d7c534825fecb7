import { failpoint, type HashNote, type OutboxFile, type PushNote, type ReplyStream } from "@hub/core";
import { type DecidedBlock, passed, type ShownPrefix, ShownPrefixFilter, ShownText } from "./shown-prefix.js";

/** Options of an `OrderedBlockPusher`. */
export interface BlockPusherOptions {
  /** What an interrupted attempt of this run showed: blocks that repeat it exactly are not pushed again. */
  shown?: ShownPrefix | undefined;
  /**
   * What the reply has shown once a block is pushed, as a note written in the block's own push (kept
   * in the run record for a resume: a crash cannot separate the two).
   */
  noteOf?: ((shown: ShownPrefix) => HashNote) | undefined;
}

/**
 * Pushes a run's reply blocks strictly one after another, so their order is
 * the model's order, without making the model stream wait on Redis. The first
 * failed push stops the rest and is kept (never an unhandled rejection); the
 * run fails or ends as superseded from it.
 */
export class OrderedBlockPusher {
  #pushing: Promise<void> = Promise.resolve();
  #error: unknown;
  readonly #filter: ShownPrefixFilter | undefined;
  readonly #noteOf: BlockPusherOptions["noteOf"];
  readonly #shown = new ShownText();

  constructor(
    private readonly reply: ReplyStream,
    options: BlockPusherOptions = {},
  ) {
    this.#filter = options.shown ? new ShownPrefixFilter(options.shown) : undefined;
    this.#noteOf = options.noteOf;
  }

  /** Queues blocks behind every earlier one (a resumed attempt's repeat of what was shown is dropped). */
  push(blocks: string[]): void {
    this.#queue(this.#filter ? this.#filter.decide(blocks) : blocks.map(passed));
  }

  // With `last`, the last block pushed ends the reply in its own push, with `last.note` (in place of what
  // the reply has shown: an attempt resumed after it finishes from that note, and sends again only if it
  // cannot read it). Every block counts toward what the reply has shown, those a resumed attempt drops
  // too (an earlier attempt showed them): so the note is this attempt's whole account, and an attempt
  // resumed after this one skips what this one pushed.
  #queue(decided: DecidedBlock[], last?: { note: PushNote | undefined }): void {
    const lastPush = last ? decided.findLastIndex((d) => d.push !== undefined) : -1;
    for (const [i, { block, push }] of decided.entries()) {
      const shown = this.#shown.add(block);
      if (push === undefined) continue;
      const ending = i === lastPush;
      const note = ending && last?.note ? last.note : this.#noteOf?.(shown);
      const options = ending ? { last: true } : undefined;
      this.#pushing = this.#pushing
        .then(async () => {
          if (this.#error !== undefined) return;
          failpoint("run.before-push");
          await this.reply.push(push, note, options);
        })
        .catch((error) => {
          this.#error ??= error;
        });
    }
  }

  // Held blocks go out before anything else does (a file, or the end of the stream).
  #release(): void {
    if (this.#filter) this.#queue(this.#filter.releaseDecided());
  }

  /** Queues a file (with its caption) behind every earlier block. */
  pushFile(file: OutboxFile, caption?: string): void {
    this.#release();
    this.#pushing = this.#pushing
      .then(() => {
        if (this.#error !== undefined) return;
        if (!this.reply.pushFile) throw new Error("this reply cannot carry files");
        return this.reply.pushFile(file, caption);
      })
      .catch((error) => {
        this.#error ??= error;
      });
  }

  /**
   * Queues a live preview of the text not pushed yet, behind every earlier block. A preview that cannot
   * be queued is only a missed update: it never stops the reply.
   */
  pushPreview(text: string): void {
    const preview = this.reply.preview;
    // A resumed attempt previews nothing while its blocks may still repeat what the interrupted one showed:
    // the preview would put that text on screen again.
    if (!preview || this.#filter?.undecided) return;
    this.#pushing = this.#pushing
      .then(() => (this.#error === undefined ? preview.call(this.reply, text) : undefined))
      .catch(() => {});
  }

  /** The first push failure, if any. */
  get error(): unknown {
    return this.#error;
  }

  /**
   * Queues the reply's last blocks behind every earlier one (held ones included), the last of them
   * ending the reply in its own push, with `note` when given (written in that push's step), and resolves
   * when every block is pushed (or the pusher stopped at a failure). With no block left to push, the
   * reply's `end` ends it (and `note` is not written).
   */
  async finish(blocks: string[], note?: PushNote): Promise<void> {
    const decided = this.#filter
      ? [...this.#filter.decide(blocks), ...this.#filter.releaseDecided()]
      : blocks.map(passed);
    this.#queue(decided, { note });
    await this.#pushing;
  }

  /** Resolves when every block queued so far is pushed (or the pusher stopped at a failure). */
  async drained(): Promise<void> {
    this.#release();
    await this.#pushing;
  }
}
