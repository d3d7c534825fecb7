import { type FailoverDecision, isFailover } from "./failover.js";
import type { ModelErrorKind } from "./model.js";

/** A failed model call's kind in plain words (what the model or its provider did). */
const FAILED_BECAUSE: Partial<Record<ModelErrorKind, string>> = {
  auth: "refused the API key",
  rate_limit: "was rate limiting the hub",
  overloaded: "was overloaded",
  network: "could not be reached",
};

/** A recorded failover decision (JSON) in plain words, for `/status`; undefined when it moved nothing (a surfaced error, a stop). */
export function describeDecision(raw: string): string | undefined {
  let d: Pick<FailoverDecision, "at" | "ref" | "kind" | "action">;
  try {
    d = JSON.parse(raw) as FailoverDecision;
  } catch {
    return undefined;
  }
  if (!isFailover(d) || d.kind === "aborted") return undefined;
  const when = `${new Date(d.at).toISOString().slice(0, 19).replace("T", " ")} UTC`;
  const what = FAILED_BECAUSE[d.kind] ?? `failed (${d.kind.replace("_", " ")})`;
  const next = d.action === "rotate_profile" ? "the provider's next API key" : "the next model";
  return `${d.ref} ${what} at ${when}, so the hub moved on to ${next}.`;
}
