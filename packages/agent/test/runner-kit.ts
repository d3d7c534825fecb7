// What the runner tests share: one runner's world on the tests' Redis (a prefix, a session lane and a state
// directory of the file's own, dropped after its tests), the runner's options, and a store whose appends
// a test can watch or break.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, type HubLogger, type ReplySink, type ReplyStream } from "@hub/core";
import {
  ApprovalStore,
  openByParts,
  type RunRecords,
  RunSteps,
  type SessionActivity,
  SessionLane,
  type SessionStore,
  type SessionWriters,
  type TranscriptEntry,
} from "@hub/sessions";
import { Redis } from "ioredis";
import { afterAll } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix } from "../../../test/support/redis.js";
import type { AgentRunnerOptions, AgentTool, ModelProvider } from "../src/index.js";

/** A test file's Redis connection, prefix, session lane and state directory. */
export interface RunnerBed {
  redis: Redis;
  prefix: string;
  logger: HubLogger;
  lane: SessionLane;
  stateDir: string;
}

/** A bed for one test file, named `name`; dropped (keys, lane, directory) after the file's tests. */
export function runnerBed(name: string): RunnerBed {
  const redis = new Redis(REDIS_URL);
  const prefix = testPrefix(name);
  const logger = createLogger({ level: "silent" });
  const lane = new SessionLane({ redisUrl: REDIS_URL, prefix, logger });
  const stateDir = mkdtempSync(join(tmpdir(), `hub-${name}-`));
  afterAll(async () => {
    await lane.close();
    await dropPrefix(prefix);
    redis.disconnect();
    rmSync(stateDir, { recursive: true, force: true });
  });
  return { redis, prefix, logger, lane, stateDir };
}

/** What a runner test chooses: its stores, its reply sink, its model and its tools. */
export interface RunnerParts {
  sessions: SessionStore;
  runs: RunRecords;
  writers: SessionWriters;
  activity: SessionActivity;
  replies: ReplySink;
  provider: ModelProvider;
  tools: AgentTool[];
}

/** A runner's options on `bed`: `parts`, and the rest as every runner test has it. */
export function runnerOptions(bed: RunnerBed, parts: RunnerParts): AgentRunnerOptions {
  const { redis, prefix, logger, stateDir } = bed;
  const { sessions, runs, writers, activity, replies, provider, tools } = parts;
  return {
    agentId: "main",
    sessions,
    runs,
    writers,
    steps: new RunSteps(redis, runs, writers, activity),
    replies,
    events: { publish: async () => {} },
    resolveModel: () => ({ provider, model: "m" }),
    modelRef: "fake/m",
    toolsFor: () => ({ tools, approvals: {}, approvalTimeoutMs: 1000 }),
    approvals: new ApprovalStore(redis, prefix),
    runTimeoutMs: 60_000,
    logger,
    supersede: async () => {},
    activity,
    workspaceDir: stateDir,
    bootstrapLimits: { perFileChars: 1000, totalChars: 1000 },
    contextWindowTokens: 100_000,
  };
}

/** A store whose appends go through `append` (given the real store's), the rest straight to `store`. */
export function withAppend(
  store: SessionStore,
  append: (id: string, entries: TranscriptEntry[], real: SessionStore["append"]) => Promise<void>,
): SessionStore {
  return {
    get: (k) => store.get(k),
    list: () => store.list(),
    resolve: (k) => store.resolve(k),
    reset: (k) => store.reset(k),
    read: (id) => store.read(id),
    append: (id, entries) => append(id, entries, (i, e) => store.append(i, e)),
    // Built from the three above, so the run's first lines go through `append` too.
    open(k, first) {
      return openByParts(this, k, first);
    },
  };
}

/**
 * A reply sink that keeps every pushed block; a reply ends only by its `end` (never by a push, and no
 * push is fenced), and none is ever delivered.
 */
export function keptBlocks(): ReplySink & { blocks: string[] } {
  const blocks: string[] = [];
  // Replies opened `once` that were pushed: a repeat of their push keeps nothing (as the dispatcher's).
  const queuedOnce = new Set<string>();
  return {
    blocks,
    open(replyId, _target, options): ReplyStream {
      let ended = false;
      let repeated = false;
      return {
        replyId,
        get ended() {
          return ended;
        },
        get repeated() {
          return repeated;
        },
        async push(block) {
          if (options?.once && queuedOnce.has(replyId)) repeated = ended = true;
          if (repeated) return;
          if (options?.once) queuedOnce.add(replyId);
          blocks.push(block);
        },
        async end() {
          ended = true;
          return 0;
        },
        async settled() {
          return { delivered: 0, failed: 0 } as never;
        },
      };
    },
  };
}
