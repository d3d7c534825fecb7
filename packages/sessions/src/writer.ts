import type { WriteFence } from "@hub/core";
import { loadScript, runScript } from "@hub/queue";
import type { Redis } from "ioredis";
import { generationBase } from "./generation-clock.js";
import { NEW_TRANSCRIPT, type TranscriptEntry } from "./transcript.js";

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

const CLAIM = loadScript(new URL("./scripts/claim.lua", import.meta.url));
const RECLAIM_FOR = loadScript(new URL("./scripts/reclaim-for.lua", import.meta.url));

/**
 * The Redis hash of a session's writer claim (runId, generation, touched) and of its running run
 * (active, activeUntil: see `SessionActivity`), which share it so a run's start and end each write one key.
 */
export function writerKey(prefix: string, sessionKey: string): string {
  return `${prefix}:writer:${sessionKey}`;
}

const RELEASE = loadScript(new URL("./scripts/release.lua", import.meta.url));

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
    return writerKey(this.prefix, sessionKey);
  }

  /** The Redis key of a session's writer claim (for scripts that fuse steps). */
  keyOf(sessionKey: string): string {
    return this.#key(sessionKey);
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
      [runId, sessionId, generationBase()],
    )) as [number, string];
    return {
      claim: { sessionKey, runId, generation: Number(generation) },
      superseded: previous && previous !== runId ? previous : undefined,
    };
  }

  /**
   * Takes the claim again for the run that holds it (a new generation, so that run's earlier claim is
   * superseded) and returns the new generation; undefined, touching nothing, when another run holds the
   * session now.
   */
  async reclaimFor(sessionKey: string, runId: string): Promise<number | undefined> {
    const generation = Number(
      await runScript(this.redis, RECLAIM_FOR, [this.#key(sessionKey)], [runId, generationBase()]),
    );
    return generation > 0 ? generation : undefined;
  }

  /** Throws `WriterSupersededError` unless the claim is still the session's current one (one HMGET: a read needs no script). */
  async assertCurrent(claim: WriterClaim): Promise<void> {
    const [runId, generation] = await this.redis.hmget(this.#key(claim.sessionKey), "runId", "generation");
    if (runId === claim.runId && generation === String(claim.generation)) return;
    throw new WriterSupersededError(claim, runId ?? null);
  }

  /** The fence of a claim: writes checked against it in Redis happen only while the claim is current. */
  fenceOf(claim: WriterClaim): WriteFence {
    return { key: this.#key(claim.sessionKey), field: "generation", value: String(claim.generation) };
  }

  /**
   * Notes a write to the session made outside any claim (a context-only message, a reset): a process's
   * in-memory copy of the session is then read again before its next run (see `HeldSessions`).
   */
  async touch(sessionKey: string): Promise<void> {
    await this.redis.hincrby(this.#key(sessionKey), "touched", 1);
  }

  /**
   * The line a new transcript of the session starts with (`/new`, in the write that creates it): its current
   * generation, so that a run frozen before its first write (its claim older), which would write into the
   * new transcript when it wakes, is a late writer there too (see `VisibleLines`). None when the session
   * never had a claim.
   */
  async newTranscriptLine(sessionKey: string): Promise<TranscriptEntry[]> {
    const generation = Number(await this.redis.hget(this.#key(sessionKey), "generation"));
    if (!(generation > 0)) return [];
    return [
      { type: "writer", runId: NEW_TRANSCRIPT, writer: `${NEW_TRANSCRIPT}#${generation}`, at: Date.now() },
    ];
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
