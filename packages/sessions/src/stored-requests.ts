import { type RunRequest, RunRequestSchema } from "@hub/core";

/** Run requests as steering, collecting and a settle's stash keep them in Redis (their JSON), read back. */
export function requestsOf(raws: string[]): RunRequest[] {
  return raws.map((raw) => RunRequestSchema.parse(JSON.parse(raw)));
}
