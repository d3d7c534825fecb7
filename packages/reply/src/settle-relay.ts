import type { ReplySettlement } from "@hub/core";

/**
 * How an agent thread's dispatcher hears of its replies' settlements from the thread that delivers them (the
 * main thread's, see `ReplyDispatcher.deliveryRoom`): told in memory by that thread's delivery, whose ack of a
 * reply's last segment then publishes nothing (a reply's settlement is otherwise published through Redis for
 * the waiter of another thread or process, a command per reply). A settlement the other thread does not tell
 * (its ack came before it heard of the wait, or another process delivered the reply) still comes through Redis.
 */
export interface SettleRelay {
  /** A wait for the reply's settlement begins on this thread: told before the step that may settle it. */
  waiting(replyId: string): void;
  /** Nobody on this thread waits for it any more (its settlement came through Redis, or the wait gave up). */
  done(replyId: string): void;
}

/** Other threads' waits for replies this thread's delivery settles (see `SettleRelay`), by reply. */
export class WaitsElsewhere {
  readonly #tell = new Map<string, (settlement: ReplySettlement) => void>();

  /** A thread waits for `replyId`: `tell` it the settlement. */
  add(replyId: string, tell: (settlement: ReplySettlement) => void): void {
    this.#tell.set(replyId, tell);
  }

  /** That thread no longer waits (or ended). */
  remove(replyId: string): void {
    this.#tell.delete(replyId);
  }

  /** How many replies other threads wait for. */
  get size(): number {
    return this.#tell.size;
  }

  /** What settles `replyId` to the thread waiting for it (undefined: none waits); the wait ends when called. */
  waiterOf(replyId: string): ((settlement: ReplySettlement) => void) | undefined {
    const tell = this.#tell.get(replyId);
    if (!tell) return undefined;
    return (settlement) => {
      if (this.#tell.get(replyId) === tell) this.#tell.delete(replyId);
      tell(settlement);
    };
  }
}
