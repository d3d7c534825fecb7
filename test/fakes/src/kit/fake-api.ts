/** The least every recorded platform call has: the method (endpoint) name, its params, when it arrived. */
export interface RecordedCall {
  method: string;
  params: Record<string, unknown>;
  /** Arrival time (ms since epoch). */
  at: number;
}

/** Options of a `FakeApi`. */
export interface FakeApiOptions {
  /** Shown in `waitForCall` timeouts, e.g. "fake telegram". */
  name: string;
  /** Match method names case-insensitively (Telegram does; Slack and Discord do not). */
  caseInsensitive?: boolean;
}

/**
 * The parts every fake platform API shares, so each fake holds only its own
 * methods: call recording, "the next N calls of a method fail with this",
 * stubbed extra methods, and waiting for a call. `F` is the platform's failure
 * shape (a Bot API error envelope, a Slack `{ ok: false, error }`, an HTTP status).
 *
 * A fake records a call with `record` when it arrives and marks it `settle`d
 * once it is answered (or parked, like a long poll); `waitForCall` resolves only
 * with settled calls, so a test that waited for a call sees its answer too.
 */
export class FakeApi<C extends RecordedCall = RecordedCall, F = unknown> {
  /** Every call in arrival order (failed ones too). */
  readonly calls: C[] = [];
  readonly #failures = new Map<string, F[]>();
  readonly #stubs = new Map<string, (params: Record<string, unknown>) => unknown>();
  readonly #settled = new WeakSet<C>();
  readonly #listeners = new Set<() => void>();

  constructor(private readonly options: FakeApiOptions) {}

  /** The key a method is stored under (lower case when matching is case-insensitive). */
  key(method: string): string {
    return this.options.caseInsensitive ? method.toLowerCase() : method;
  }

  /** Records an arriving call; returns it so the fake can fill in its answer. */
  record(call: C): C {
    this.calls.push(call);
    return call;
  }

  /** Marks a call answered (or parked) so `waitForCall` can see it. */
  settle(call: C): void {
    this.#settled.add(call);
    for (const listener of [...this.#listeners]) listener();
  }

  /** All recorded calls of one method. */
  callsOf(method: string): C[] {
    const key = this.key(method);
    return this.calls.filter((c) => this.key(c.method) === key);
  }

  /**
   * Resolves with the first settled call of `method` (past or future) matching
   * `predicate`; rejects after `timeoutMs`.
   */
  waitForCall(method: string, predicate: (call: C) => boolean = () => true, timeoutMs = 5000): Promise<C> {
    const key = this.key(method);
    return new Promise<C>((resolve, reject) => {
      const check = () => {
        const found = this.calls.find(
          (c) => this.#settled.has(c) && this.key(c.method) === key && predicate(c),
        );
        if (!found) return;
        this.#listeners.delete(check);
        clearTimeout(timer);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.#listeners.delete(check);
        reject(new Error(`${this.options.name}: no ${method} call within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#listeners.add(check);
      check();
    });
  }

  /** The next `times` calls of `method` answer with `failure`. */
  failNext(method: string, failure: F, times = 1): void {
    const key = this.key(method);
    const queue = this.#failures.get(key) ?? [];
    for (let k = 0; k < times; k++) queue.push(failure);
    this.#failures.set(key, queue);
  }

  /** The failure queued for this call of `method`, if any (consumed). */
  takeFailure(method: string): F | undefined {
    return this.#failures.get(this.key(method))?.shift();
  }

  /** Implements an extra method; the handler's return value becomes the fake's success answer. */
  stub(method: string, handler: (params: Record<string, unknown>) => unknown): void {
    this.#stubs.set(this.key(method), handler);
  }

  /** Removes the stub of `method`: it answers as the fake implements it again. */
  unstub(method: string): void {
    this.#stubs.delete(this.key(method));
  }

  /** The stub of `method`, if a test set one. */
  stubFor(method: string): ((params: Record<string, unknown>) => unknown) | undefined {
    return this.#stubs.get(this.key(method));
  }
}
