import { z } from "zod";
import type { ModelErrorKind } from "./model.js";

/** A failed model call's kind in plain words (what the model or its provider did). */
const FAILED_BECAUSE: Partial<Record<ModelErrorKind, string>> = {
  auth: "refused the API key",
  rate_limit: "was rate limiting the hub",
  overloaded: "was overloaded",
  network: "could not be reached",
};

/** A recorded failover decision as `/status` reads it back from Redis (anything else is skipped). */
const RecordedDecisionSchema = z.object({
  at: z.number().finite(),
  ref: z.string(),
  kind: z.string(),
  action: z.enum(["rotate_profile", "next_model", "surface"]),
});

/** A recorded failover decision (JSON) in plain words, for `/status`; undefined when it moved nothing (a surfaced error, a stop) or cannot be read. */
export function describeDecision(raw: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const read = RecordedDecisionSchema.safeParse(parsed);
  if (!read.success) return undefined;
  const d = read.data;
  if (d.action === "surface" || d.kind === "aborted" || Number.isNaN(new Date(d.at).getTime()))
    return undefined;
  const when = `${new Date(d.at).toISOString().slice(0, 19).replace("T", " ")} UTC`;
  const known = Object.hasOwn(FAILED_BECAUSE, d.kind) ? FAILED_BECAUSE[d.kind as ModelErrorKind] : undefined;
  const what = known ?? `failed (${d.kind.replaceAll("_", " ")})`;
  const next = d.action === "rotate_profile" ? "the provider's next API key" : "the next model";
  return `${d.ref} ${what} at ${when}, so the hub moved on to ${next}.`;
}
