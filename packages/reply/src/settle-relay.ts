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

/**
 * Other threads' waits for replies this thread's delivery settles (see `SettleRelay`), by reply: more than one
 * thread may wait for one reply (each agent thread's start checks the same replies).
 */
export class WaitsElsewhere {
  readonly #tells = new Map<string, Set<(settlement: ReplySettlement) => void>>();

  /** A thread waits for `replyId`: `tell` it the settlement. */
  add(replyId: string, tell: (settlement: ReplySettlement) => void): void {
    const tells = this.#tells.get(replyId) ?? new Set();
    tells.add(tell);
    this.#tells.set(replyId, tells);
  }

  /** That thread no longer waits (or ended). */
  remove(replyId: string, tell: (settlement: ReplySettlement) => void): void {
    const tells = this.#tells.get(replyId);
    if (tells?.delete(tell) && tells.size === 0) this.#tells.delete(replyId);
  }

  /** How many replies other threads wait for. */
  get size(): number {
    return this.#tells.size;
  }

  /**
   * What settles `replyId` to the threads waiting for it (undefined: none waits now): each thread waiting
   * for it when it is called (a wait begun again since included) is told, and its wait ends.
   */
  waiterOf(replyId: string): ((settlement: ReplySettlement) => void) | undefined {
    if (!this.#tells.has(replyId)) return undefined;
    return (settlement) => {
      const tells = this.#tells.get(replyId);
      this.#tells.delete(replyId);
      for (const tell of tells ?? []) tell(settlement);
    };
  }
}
