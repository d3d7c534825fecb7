/**
 * A drain worker's room, shared with the other threads of its process: its free slots and whether keys
 * wait on the ready list for it (written by the worker's own thread), and the claims other threads made for
 * it and have not yet handed over. A step on another thread (an agent thread's push of a reply) may then
 * claim an idle key for this worker in its own step, as a step of the worker's own thread does (see
 * `OrderedMailbox.reserveDrainHere`), instead of waking it through the ready list for a separate claim.
 * Racing threads never count on one free slot twice; a slot taken by the worker's own thread in between
 * makes the handed-over key wait for one, or go back to the ready list (see `OrderedMailbox.adopt`); the
 * worker's own thread leaves the slots other threads hold to them (`held`). With no slot free but one soon
 * (see `MailboxTuning.slotWaitMs`), a few keys may be claimed to wait for it there.
 */
export class WorkerRoom {
  // [free slots, keys wait on the ready list (1) or not (0), slots other threads hold for claims not yet
  // handed over, how many more keys may be claimed to wait for a slot]
  readonly #cells: Int32Array;
  // Slots held through this object (on its thread) by steps still under way: neither handed over nor given back.
  #mine = 0;
  // Where #mine is mirrored for the worker's thread, which forgets those slots if this thread ends (`forget`).
  readonly #mirror: Int32Array | undefined;

  /**
   * `buffer`: the room as another thread received it (a new one when omitted); `holds`: a cell the worker's
   * thread can read this object's held slots from (see `forget`).
   */
  constructor(
    readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT),
    holds?: SharedArrayBuffer,
  ) {
    this.#cells = new Int32Array(buffer);
    this.#mirror = holds && new Int32Array(holds);
  }

  /** A cell for `holds` (one per thread that claims through this room). */
  static holdsCell(): SharedArrayBuffer {
    return new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
  }

  /**
   * The worker's thread: a thread that claimed through this room ended; the slots it held (read from its
   * `holds` cell, then cleared) are free again.
   */
  forget(holds: SharedArrayBuffer): void {
    const cell = new Int32Array(holds);
    Atomics.sub(this.#cells, 2, Atomics.exchange(cell, 0, 0));
  }

  #mineChanged(by: number): void {
    this.#mine += by;
    if (this.#mirror) Atomics.store(this.#mirror, 0, this.#mine);
  }

  /**
   * The worker's thread: its free slots now, whether ready keys go first, and how many more keys may wait
   * for a slot there (see `OrderedMailbox`'s slot-wait estimate).
   */
  publish(free: number, readyFirst: boolean, waits = 0): void {
    Atomics.store(this.#cells, 0, free);
    Atomics.store(this.#cells, 1, readyFirst ? 1 : 0);
    Atomics.store(this.#cells, 3, waits);
  }

  /** The worker's thread: the slots other threads hold for keys they are claiming for it (not its to fill). */
  held(): number {
    return Math.max(0, Atomics.load(this.#cells, 2));
  }

  /**
   * Another thread: holds one of the free slots for a step that may claim a key ("slot"), or, with none free,
   * one of the places to wait for a slot that frees up soon ("wait"; nothing to give back); undefined when
   * neither (`slotOnly`: no place to wait is taken). A slot is given back with `release` (nothing claimed)
   * or `handedOver` (the claim posted).
   */
  reserve(slotOnly = false): "slot" | "wait" | undefined {
    const cells = this.#cells;
    for (;;) {
      if (Atomics.load(cells, 1) === 1) return undefined;
      const pending = Atomics.load(cells, 2);
      if (Atomics.load(cells, 0) - pending > 0) {
        if (Atomics.compareExchange(cells, 2, pending, pending + 1) !== pending) continue;
        this.#mineChanged(1);
        return "slot";
      }
      const waits = slotOnly ? 0 : Atomics.load(cells, 3);
      if (waits <= 0) return undefined;
      if (Atomics.compareExchange(cells, 3, waits, waits - 1) === waits) return "wait";
    }
  }

  /** The step that held a slot claimed nothing: the slot is free again. */
  release(): void {
    this.#mineChanged(-1);
    Atomics.sub(this.#cells, 2, 1);
  }

  /** The step that held a slot posted its claim: the worker's thread gives the slot back as it takes the key. */
  handedOver(): void {
    this.#mineChanged(-1);
  }

  /** The worker's thread took a key claimed for it: the slot held for it is its own now. */
  taken(): void {
    Atomics.sub(this.#cells, 2, 1);
  }

  /**
   * The worker's thread ended (seen by the thread that holds this object, the only one that claims for
   * it): nothing more is claimed for it, and the slots held for claims posted to it and never taken are
   * forgotten (their keys' leases run out); those its steps still hold stay counted until they end.
   */
  ended(): void {
    Atomics.store(this.#cells, 0, 0);
    Atomics.store(this.#cells, 1, 1);
    Atomics.store(this.#cells, 2, this.#mine);
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
