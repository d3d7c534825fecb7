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

/** What failover decided after a failed call; logged and kept for `/status`. */
export interface FailoverDecision {
  at: number;
  ref: string;
  profile: string;
  kind: ModelErrorKind;
  action: "rotate_profile" | "next_model" | "surface";
  message: string;
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

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    let last: unknown;
    for (const candidate of this.chain) {
      const now = Date.now();
      const ready = candidate.profiles.filter((p) => (this.#cooldownUntil.get(p.id) ?? 0) <= now);
      // When every profile is cooling down, still try the one that is ready soonest rather than none.
      const profiles = ready.length
        ? ready
        : [...candidate.profiles]
            .sort((a, b) => (this.#cooldownUntil.get(a.id) ?? 0) - (this.#cooldownUntil.get(b.id) ?? 0))
            .slice(0, 1);
      let nextModel = false;
      for (const profile of profiles) {
        let streamed = false;
        try {
          const input = candidate.images === false ? withoutImages(request) : request;
          for await (const event of profile.provider.stream({ ...input, model: candidate.model })) {
            streamed = true;
            yield event;
          }
          return;
        } catch (error) {
          last = error;
          const kind: ModelErrorKind = error instanceof ModelError ? error.kind : "unknown";
          const action = streamed ? "surface" : failoverAction(kind);
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
          if (action === "surface") throw error;
          if (action === "next_model") {
            nextModel = true;
            break;
          }
        }
      }
      if (!nextModel)
        this.logger.warn(
          { ref: candidate.ref },
          "every auth profile of this model failed; trying the next model",
        );
    }
    throw last ?? new ModelError("unknown", "no model candidate could answer");
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
