/**
 * A drain worker's room, shared with the other threads of its process: its free slots and whether keys
 * wait on the ready list for it (written by the worker's own thread), and the claims other threads made for
 * it and have not yet handed over. A step on another thread (an agent thread's push of a reply) may then
 * claim an idle key for this worker in its own step, as a step of the worker's own thread does (see
 * `OrderedMailbox.reserveDrainHere`), instead of waking it through the ready list for a separate claim.
 * Racing threads never count on one free slot twice; a slot taken by the worker's own thread in between
 * makes the handed-over key wait for one, or go back to the ready list (see `OrderedMailbox.adopt`). With
 * no slot free but one soon (see `MailboxTuning.slotWaitMs`), a key may be claimed to wait for it there.
 */
export class WorkerRoom {
  // [free slots, keys wait on the ready list (1) or not (0), claims handed over from other threads holding a
  // slot, a slot frees up soon (1) or not (0)]
  readonly #cells: Int32Array;

  /** `buffer`: the room as another thread received it (a new one when omitted). */
  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT)) {
    this.#cells = new Int32Array(buffer);
  }

  /** The worker's thread: its free slots now, whether ready keys go first, and whether a slot frees up soon. */
  publish(free: number, readyFirst: boolean, soon = false): void {
    Atomics.store(this.#cells, 0, free);
    Atomics.store(this.#cells, 1, readyFirst ? 1 : 0);
    Atomics.store(this.#cells, 3, soon ? 1 : 0);
  }

  /**
   * Another thread: holds one of the free slots for a step that may claim a key ("slot"), or, with none free
   * and one soon, lets it claim a key to wait there ("wait"; nothing held); undefined when neither.
   */
  reserve(): "slot" | "wait" | undefined {
    const cells = this.#cells;
    for (;;) {
      if (Atomics.load(cells, 1) === 1) return undefined;
      const pending = Atomics.load(cells, 2);
      if (Atomics.load(cells, 0) - pending <= 0) return Atomics.load(cells, 3) === 1 ? "wait" : undefined;
      if (Atomics.compareExchange(cells, 2, pending, pending + 1) === pending) return "slot";
    }
  }

  /** A held slot given back: the step claimed nothing, or the worker took the key it claimed. */
  release(): void {
    Atomics.sub(this.#cells, 2, 1);
  }

  /**
   * The worker's thread ended: nothing more is claimed for it, and the claims handed to it and never taken
   * are forgotten (their leases run out) until a worker started again on this room publishes its own.
   */
  ended(): void {
    Atomics.store(this.#cells, 0, 0);
    Atomics.store(this.#cells, 1, 1);
    Atomics.store(this.#cells, 2, 0);
    Atomics.store(this.#cells, 3, 0);
  }
}

/** A key a step on another thread claimed for a worker, handed to the worker's mailbox (see `OrderedMailbox.adopt`). */
export interface ClaimedKey {
  key: string;
  /** The lease token the step claimed it with. */
  token: string;
  claimedAt: number;
  /** Its head item, handed out as attempt 1. */
  head: string;
  /** What the claiming step adds for the worker's thread (a session admission: the run it began there). */
  carry?: unknown;
  /** Claimed to wait for a slot (no slot held for it: see `WorkerRoom.reserve`). */
  waits?: boolean;
}

/** A worker of another thread of this process that this mailbox's steps may claim keys for. */
export interface RemoteWorker {
  room: WorkerRoom;
  /** Hands a key claimed for it to its thread (which calls `OrderedMailbox.adopt`). */
  claimed(claim: ClaimedKey): void;
}
