/** A key a step claimed for this process (see `OrderedMailbox.reserveDrainHere`) that waits for a drain slot. */
export interface WaitingKey {
  key: string;
  /** The lease token the step claimed the key with. */
  token: string;
  claimedAt: number;
  /** The key's head item, handed out as attempt 1 when a slot frees up. */
  head: string;
}

/**
 * Keys claimed for one worker of this process while all its slots were busy, in claim order: each
 * takes the next slot that frees up, or, after `maxWaitMs` without one, is handed back (to the ready
 * list, for any process). Claimed here, a key costs its step two writes; through the ready list, a
 * wake-up and a claim of its own.
 */
export class WaitingKeys {
  readonly #queue: Array<{ waiting: WaitingKey; timer: NodeJS.Timeout }> = [];
  // Places held for steps in flight that may claim a key (each step reserves one first).
  #reserved = 0;

  constructor(
    private readonly maxWaitMs: number,
    private readonly handBack: (waiting: WaitingKey) => void,
  ) {}

  /** Keys waiting, counting places reserved for steps in flight. */
  get size(): number {
    return this.#queue.length + this.#reserved;
  }

  /** Holds a place for a step that may claim a key; the returned function frees it (once). */
  reserve(): () => void {
    this.#reserved++;
    let held = true;
    return () => {
      if (held) this.#reserved--;
      held = false;
    };
  }

  /** A claimed key, to wait for a slot (see `next`). */
  add(waiting: WaitingKey): void {
    const timer = setTimeout(() => {
      const at = this.#queue.findIndex((entry) => entry.timer === timer);
      if (at < 0) return;
      this.#queue.splice(at, 1);
      this.handBack(waiting);
    }, this.maxWaitMs);
    timer.unref();
    this.#queue.push({ waiting, timer });
  }

  /** The key that has waited longest, for a slot that just freed up. */
  next(): WaitingKey | undefined {
    const entry = this.#queue.shift();
    if (entry) clearTimeout(entry.timer);
    return entry?.waiting;
  }

  /** Hands every waiting key back (the worker is closing). */
  handBackAll(): void {
    for (let waiting = this.next(); waiting; waiting = this.next()) this.handBack(waiting);
  }
}
