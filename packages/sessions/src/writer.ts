import type { WriteFence } from "@hub/core";
import { runScript } from "@hub/queue";
import type { Redis } from "ioredis";

/** The current writer of a session: which run, and its claim generation. */
export interface WriterClaim {
  sessionKey: string;
  runId: string;
  generation: number;
}

/** Thrown when a run tries to write a session whose writer claim it no longer holds. */
export class WriterSupersededError extends Error {
  constructor(
    readonly claim: WriterClaim,
    readonly currentRunId: string | null,
  ) {
    super(
      `run ${claim.runId} no longer owns session ${claim.sessionKey} (current writer: ${currentRunId ?? "none"})`,
    );
    this.name = "WriterSupersededError";
  }
}

// claim(writer; runId, sessionId) -> {generation, previous runId or ""}
const CLAIM = `
local previous = redis.call('HGET', KEYS[1], 'runId') or ''
local generation = redis.call('HINCRBY', KEYS[1], 'generation', 1)
redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionId', ARGV[2])
return {generation, previous}
`;
// check(writer; runId, generation) -> '' when still the writer, else the current writer's runId (or '-')
const CHECK = `
local runId = redis.call('HGET', KEYS[1], 'runId')
if runId == ARGV[1] and redis.call('HGET', KEYS[1], 'generation') == ARGV[2] then return '' end
return runId or '-'
`;
// release(writer; runId, generation) -> 1 released, 0 a newer claim holds it (left alone)
const RELEASE = `
if redis.call('HGET', KEYS[1], 'runId') == ARGV[1] and redis.call('HGET', KEYS[1], 'generation') == ARGV[2] then
  redis.call('HDEL', KEYS[1], 'runId', 'sessionId')
  return 1
end
return 0
`;

/**
 * Who may write a session right now, decided by generation in Redis (so it
 * holds across processes): the last claim wins, and an older claim's writes
 * are refused. A run's own writes are checked only against its claim, never
 * against file size, mtime or inode, so they can never look like a takeover.
 */
export class SessionWriters {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  #key(sessionKey: string): string {
    return `${this.prefix}:writer:${sessionKey}`;
  }

  /** Claims the session for a run (CAS on the generation); returns the claim and whom it superseded. */
  async claim(
    sessionKey: string,
    sessionId: string,
    runId: string,
  ): Promise<{ claim: WriterClaim; superseded: string | undefined }> {
    const [generation, previous] = (await runScript(
      this.redis,
      CLAIM,
      [this.#key(sessionKey)],
      [runId, sessionId],
    )) as [number, string];
    return {
      claim: { sessionKey, runId, generation },
      superseded: previous && previous !== runId ? previous : undefined,
    };
  }

  /** Throws `WriterSupersededError` unless the claim is still the session's current one. */
  async assertCurrent(claim: WriterClaim): Promise<void> {
    const current = (await runScript(
      this.redis,
      CHECK,
      [this.#key(claim.sessionKey)],
      [claim.runId, claim.generation],
    )) as string;
    if (current !== "") throw new WriterSupersededError(claim, current === "-" ? null : current);
  }

  /** The fence of a claim: writes checked against it in Redis happen only while the claim is current. */
  fenceOf(claim: WriterClaim): WriteFence {
    return { key: this.#key(claim.sessionKey), field: "generation", value: String(claim.generation) };
  }

  /** Ends a claim; a newer claim (a successor) is left untouched. */
  async release(claim: WriterClaim): Promise<boolean> {
    return (
      (await runScript(
        this.redis,
        RELEASE,
        [this.#key(claim.sessionKey)],
        [claim.runId, claim.generation],
      )) === 1
    );
  }
}
