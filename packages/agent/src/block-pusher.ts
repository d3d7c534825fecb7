import { failpoint, type OutboxFile, type ReplyStream } from "@hub/core";

/**
 * Pushes a run's reply blocks strictly one after another, so their order is
 * the model's order, without making the model stream wait on Redis. The first
 * failed push stops the rest and is kept (never an unhandled rejection); the
 * run fails or ends as superseded from it.
 */
export class OrderedBlockPusher {
  #pushing: Promise<void> = Promise.resolve();
  #error: unknown;

  constructor(private readonly reply: ReplyStream) {}

  /** Queues blocks behind every earlier one. */
  push(blocks: string[]): void {
    for (const block of blocks) {
      this.#pushing = this.#pushing
        .then(() => {
          if (this.#error !== undefined) return;
          failpoint("run.before-push");
          return this.reply.push(block);
        })
        .catch((error) => {
          this.#error ??= error;
        });
    }
  }

  /** Queues a file (with its caption) behind every earlier block. */
  pushFile(file: OutboxFile, caption?: string): void {
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
    if (!preview) return;
    this.#pushing = this.#pushing
      .then(() => (this.#error === undefined ? preview.call(this.reply, text) : undefined))
      .catch(() => {});
  }

  /** The first push failure, if any. */
  get error(): unknown {
    return this.#error;
  }

  /** Resolves when every block queued so far is pushed (or the pusher stopped at a failure). */
  async drained(): Promise<void> {
    await this.#pushing;
  }
}
