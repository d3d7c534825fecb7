import type { HubLogger } from "@hub/core";
import {
  ModelError,
  type ModelErrorKind,
  type ModelEvent,
  type ModelProvider,
  type ModelRequest,
} from "./model.js";

/** One auth profile of a provider (e.g. one API key), with its own cooldown. */
export interface AuthProfile {
  id: string;
  provider: ModelProvider;
}

/** One model in the agent's candidate chain: a `provider/model` ref and the provider's auth profiles. */
export interface ModelCandidate {
  ref: string;
  model: string;
  profiles: AuthProfile[];
  /** False when the model takes no images: a request's images become notes for it. */
  images?: boolean;
}

/** What failover decided after a failed call; logged, and kept for `/status` when it is a failover (see `isFailover`). */
export interface FailoverDecision {
  at: number;
  ref: string;
  profile: string;
  kind: ModelErrorKind;
  action: "rotate_profile" | "next_model" | "surface";
  message: string;
}

/** Whether a decision moved the call to another auth profile or model (a bad request surfaced is not a failover). */
export function isFailover(decision: Pick<FailoverDecision, "action">): boolean {
  return decision.action !== "surface";
}

/** How long a profile rests after a failure of each kind (ms). */
const COOLDOWN_MS: Partial<Record<ModelErrorKind, number>> = { auth: 10 * 60_000, rate_limit: 60_000 };

/** What to do about each kind of failure. */
export function failoverAction(kind: ModelErrorKind): FailoverDecision["action"] {
  switch (kind) {
    case "auth":
    case "rate_limit":
      return "rotate_profile";
    case "overloaded":
    case "network":
      return "next_model";
    default:
      // A bad request or an overflowing context fails on every model alike; an abort is the user's.
      return "surface";
  }
}

/**
 * A model provider over the agent's candidate chain. A failed call is
 * classified and either retried with the provider's next auth profile (the
 * failed one cools down), moved to the next model, or surfaced. Failover
 * happens only before the first event of a call: once a candidate has
 * streamed, its failure is the run's, so a failed candidate never leaves a
 * half answer behind another's.
 */
export class FailoverProvider implements ModelProvider {
  readonly id = "failover";
  readonly #cooldownUntil = new Map<string, number>();

  constructor(
    private readonly chain: ModelCandidate[],
    private readonly logger: HubLogger,
    private readonly onDecision: (decision: FailoverDecision) => void = () => {},
  ) {
    if (chain.length === 0) throw new Error("the model candidate chain is empty");
  }

  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    return { [Symbol.asyncIterator]: () => new FailoverCall(this, request) };
  }

  // The action as far as the chain allows it: with no other API key the next model, with no next model the
  // error itself (so a decision never says the hub moved on to something it does not have).
  #possible(candidate: ModelCandidate, action: FailoverDecision["action"]): FailoverDecision["action"] {
    const nextModel = this.chain.indexOf(candidate) < this.chain.length - 1;
    if (action === "rotate_profile" && candidate.profiles.length < 2)
      return nextModel ? "next_model" : "surface";
    if (action === "next_model" && !nextModel) return "surface";
    return action;
  }

  /** The profiles of a candidate to try now: the ready ones, or (all cooling down) the one ready soonest. */
  profilesOf(candidate: ModelCandidate): AuthProfile[] {
    const now = Date.now();
    const until = (p: AuthProfile) => this.#cooldownUntil.get(p.id) ?? 0;
    const ready = candidate.profiles.filter((p) => until(p) <= now);
    return ready.length ? ready : [...candidate.profiles].sort((a, b) => until(a) - until(b)).slice(0, 1);
  }

  /**
   * Classifies a failed call, logs and records the decision, cools the profile
   * down; returns the action. A call the run aborted (the user's /stop, the run's
   * timeout, a newer run) did not fail: it is passed on as it is, not recorded.
   */
  decide(
    candidate: ModelCandidate,
    profile: AuthProfile,
    error: unknown,
    streamed: boolean,
    aborted: boolean,
  ) {
    const kind: ModelErrorKind = error instanceof ModelError ? error.kind : "unknown";
    if (aborted || kind === "aborted") {
      this.logger.debug({ ref: candidate.ref, profile: profile.id }, "model call stopped by its run");
      return "surface";
    }
    const action = streamed ? "surface" : this.#possible(candidate, failoverAction(kind));
    const decision: FailoverDecision = {
      at: Date.now(),
      ref: candidate.ref,
      profile: profile.id,
      kind,
      action,
      message: error instanceof Error ? error.message : String(error),
    };
    this.logger.warn({ ...decision }, `model call failed (${kind}); ${action.replace("_", " ")}`);
    this.onDecision(decision);
    const cooldown = COOLDOWN_MS[kind];
    if (cooldown) this.#cooldownUntil.set(profile.id, Date.now() + cooldown);
    return action;
  }

  /** Logs that every profile of a candidate failed (the chain moves on to the next model). */
  exhausted(candidate: ModelCandidate): void {
    this.logger.warn(
      { ref: candidate.ref },
      "every auth profile of this model failed; trying the next model",
    );
  }

  /** The candidate chain, in order. */
  get candidates(): readonly ModelCandidate[] {
    return this.chain;
  }
}

/**
 * One call over the chain, as an async iterator. Until the first event it tries candidates and
 * profiles in turn; from then on each `next` is the candidate's own, with one handler for a failure
 * (surfaced: logged, recorded, the profile cooled down) instead of an async generator's hand-offs per
 * event (a model streams hundreds of events per answer).
 */
class FailoverCall implements AsyncIterator<ModelEvent> {
  #candidate = -1;
  #profiles: AuthProfile[] = [];
  #profile = 0;
  #switchedModel = false;
  #inner: AsyncIterator<ModelEvent> | undefined;
  #streamed = false;
  #over = false;
  #last: unknown;

  constructor(
    private readonly provider: FailoverProvider,
    private readonly request: ModelRequest,
  ) {}

  next(): Promise<IteratorResult<ModelEvent>> {
    if (this.#over) return Promise.resolve({ done: true, value: undefined });
    const inner = this.#inner;
    if (inner && this.#streamed) return inner.next().then(this.#onResult, this.#onStreamFailure);
    return this.#start();
  }

  async return(): Promise<IteratorResult<ModelEvent>> {
    const inner = this.#inner;
    this.#over = true;
    this.#inner = undefined;
    await inner?.return?.();
    return { done: true, value: undefined };
  }

  readonly #onResult = (result: IteratorResult<ModelEvent>): IteratorResult<ModelEvent> => {
    if (!result.done) return result;
    this.#over = true;
    return { done: true, value: undefined };
  };

  readonly #onStreamFailure = (error: unknown): never => {
    this.#over = true;
    const profile = this.#profiles[this.#profile] as AuthProfile;
    this.provider.decide(this.#current(), profile, error, true, this.request.signal?.aborted === true);
    throw error;
  };

  // Before the first event: the current profile's call, or the next profile or candidate after a failure.
  async #start(): Promise<IteratorResult<ModelEvent>> {
    for (;;) {
      try {
        this.#inner ??= this.#open();
        const result = await this.#inner.next();
        if (result.done) return this.#onResult(result);
        this.#streamed = true;
        return result;
      } catch (error) {
        if (this.#over) throw error;
        this.#failed(error);
      }
    }
  }

  // Opens the call of the current profile, moving to the next candidate when this one has none left.
  #open(): AsyncIterator<ModelEvent> {
    while (this.#candidate < 0 || this.#profile >= this.#profiles.length) {
      if (this.#candidate >= 0 && !this.#switchedModel) this.provider.exhausted(this.#current());
      this.#candidate++;
      if (this.#candidate >= this.provider.candidates.length) {
        this.#over = true;
        throw this.#last ?? new ModelError("unknown", "no model candidate could answer");
      }
      this.#profiles = this.provider.profilesOf(this.#current());
      this.#profile = 0;
      this.#switchedModel = false;
    }
    const candidate = this.#current();
    const profile = this.#profiles[this.#profile] as AuthProfile;
    const input = candidate.images === false ? withoutImages(this.request) : this.request;
    return profile.provider.stream({ ...input, model: candidate.model })[Symbol.asyncIterator]();
  }

  // A failure before the first event: surfaced, or the next profile, or the next model.
  #failed(error: unknown): void {
    this.#last = error;
    this.#inner = undefined;
    const profile = this.#profiles[this.#profile] as AuthProfile;
    const aborted = this.request.signal?.aborted === true;
    const action = this.provider.decide(this.#current(), profile, error, false, aborted);
    if (action === "surface") {
      this.#over = true;
      throw error;
    }
    if (action === "next_model") {
      this.#switchedModel = true;
      this.#profile = this.#profiles.length;
      return;
    }
    this.#profile++;
  }

  #current(): ModelCandidate {
    return this.provider.candidates[this.#candidate] as ModelCandidate;
  }
}

/** A request for a model without image input: each image becomes a note in its message's text. */
function withoutImages(request: ModelRequest): ModelRequest {
  if (!request.messages.some((m) => m.role === "user" && m.images?.length)) return request;
  const messages = request.messages.map((m) => {
    if (m.role !== "user" || !m.images?.length) return m;
    const notes = m.images.map((image) => `[image: ${image.name}: this model does not take images]`);
    return { role: "user" as const, content: [m.content, ...notes].filter((t) => t !== "").join("\n") };
  });
  return { ...request, messages };
}
