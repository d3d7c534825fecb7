import type { HubConfig, RunRequest } from "@hub/core";
import type { ClaimedKey } from "@hub/queue";

/** What an agent thread starts from (its `workerData`): the hub's config and where its state and log go. */
export interface AgentThreadData {
  config: HubConfig;
  stateDir: string;
  /** The gateway token: a secret its log lines never show. */
  token: string;
  /** The thread's number (1, 2, …), on each of its log lines as `thread`. */
  index: number;
  /** The main thread's log level, and the descriptor of a file the lines go to instead of standard output. */
  log: { level: string; fd?: number | undefined };
  /** The config file SIGHUP reads again (undefined: the hub runs on its defaults). */
  configPath: string | undefined;
  /**
   * The main thread's delivery room (shared memory), when it delivers: the thread's reply pushes claim idle
   * targets for that delivery (see `ReplyDispatcherOptions.remoteDelivery`) and post each one it claimed.
   */
  deliveryRoom?: SharedArrayBuffer | undefined;
}

/** A message of the main thread's for an agent thread to admit into its session (see AgentThreads.admitting). */
export interface AdmitAsk {
  request: RunRequest;
  dedupe: { key: string; ttlSeconds: number };
  buckets: Array<{ key: string; burst: number; perMinute: number }>;
}

/** A question the main thread asks an agent thread; the answer comes back with the same `id`. */
export type AgentThreadRequest =
  | {
      id: number;
      /**
       * `metrics`: its counters and histograms; `runs`: its runs in flight; `running`: whether its runner
       * takes work; `reload`: read the config file again (SIGHUP); `stop`: stop as a hub process stops, by `by`.
       */
      ask: "metrics" | "runs" | "running" | "reload" | "stop";
      by?: number | undefined;
    }
  /** `admit`: admit a message (the answer is its admission outcome). */
  | { id: number; ask: "admit"; admit: AdmitAsk };

/**
 * What an agent thread posts: that it started (or why it could not), the answer to a request, or a reply
 * target one of its pushes claimed for the main thread's delivery (see `AgentThreadData.deliveryRoom`).
 */
export type AgentThreadMessage =
  | { kind: "ready" }
  | { kind: "failed"; error: string }
  | { kind: "answer"; id: number; value: unknown }
  | { kind: "claimed"; claim: ClaimedKey };
