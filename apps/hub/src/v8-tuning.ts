import { setFlagsFromString } from "node:v8";

/**
 * The V8 flags `hub start` sets for its own process. `--no-allocation-site-pretenuring`: V8 learns, from
 * a burst in which messages wait long (a backlog), to allocate what a message's code allocates straight in
 * the old generation, and keeps that choice after the burst. A message's objects then die there, and keep
 * the young objects they point to alive through every scavenge until the next full collection: at 800
 * messages/s after such a burst, 10-12% of what the hub allocated was promoted (4% without), scavenges
 * took 7% of its time (4%), and full collections came every few seconds, each a stall of 40-90 ms that
 * made the latency tail. In a backlog the hub is as fast either way (see the README's Performance).
 */
export const HUB_V8_FLAGS: readonly string[] = ["--no-allocation-site-pretenuring"];

/**
 * The node flags the hub's process is started with, on node's command line: V8 reads them only as it sets
 * its heap up, so `hub start` cannot set them for itself as it sets `HUB_V8_FLAGS`. `npm start` and `npm run
 * hub` (scripts/bootstrap.mjs), the Docker image's CMD, `scripts/check-build.mjs` and the bench's hub
 * processes pass them (a test checks the first three). `--max-semi-space-size=64`: young objects get 64 MB
 * semi-spaces instead of V8's 16 MB, so under load a message's objects die before a scavenge rather than
 * being copied and promoted (see the README's Performance, stop 52: hub-added p99 13-17 ms against 28-42 ms
 * at 900 messages/s, about 10% more messages/s); what it costs is memory under load (an idle hub gives it
 * back within seconds).
 */
export const HUB_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=64"];

// A flag's name without its `--` or `--no-` and with `_` as `-`, as V8 reads it.
const flagName = (arg: string) =>
  arg
    .replace(/^--(no-)?/, "")
    .split("=")[0]
    ?.replace(/_/g, "-");

/** The hub's V8 flags that the command line (`node --<flag> …`) does not already set either way. */
export function v8FlagsToSet(execArgv: readonly string[]): string[] {
  const given = new Set(execArgv.filter((arg) => arg.startsWith("--")).map(flagName));
  return HUB_V8_FLAGS.filter((flag) => !given.has(flagName(flag)));
}

/**
 * Sets the hub's V8 flags (see `HUB_V8_FLAGS`) before the hub's code runs its first message; returns the
 * ones it set. Only flags V8 reads as it runs are set this way.
 */
export function tuneV8(execArgv: readonly string[] = process.execArgv): string[] {
  const flags = v8FlagsToSet(execArgv);
  for (const flag of flags) setFlagsFromString(flag);
  return flags;
}
