import type { HubConfig, ReplySettlement } from "@hub/core";
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
  /** Where the thread keeps the slots it holds in `deliveryRoom`, freed by the main thread if it ends. */
  deliveryHolds: SharedArrayBuffer;
  /**
   * The thread's runner's room (shared memory): the main thread's admission claims sessions for the runner
   * while it has free slots, and posts each one it claimed (`SessionClaimed`).
   */
  laneRoom: SharedArrayBuffer;
}

/** A question the main thread asks an agent thread; the answer comes back with the same `id`. */
export interface AgentThreadRequest {
  id: number;
  /**
   * `metrics`: its counters and histograms; `runs`: its runs in flight; `running`: whether its runner takes
   * work; `reload`: read the config file again (SIGHUP); `stop`: stop as a hub process stops, by `by`.
   */
  ask: "metrics" | "runs" | "running" | "reload" | "stop";
  by?: number | undefined;
}

/**
 * What the main thread posts to an agent thread besides its questions: a session its admission claimed for the
 * thread's runner (see `AgentThreadData.laneRoom`), or the settlement of a reply the thread waits for, which
 * the main thread's delivery settled (see `SettleRelay`).
 */
export type ToAgentThread =
  | { kind: "session"; claim: ClaimedKey }
  | { kind: "settled"; replyId: string; settlement: ReplySettlement };

/**
 * What an agent thread posts: that it started (or why it could not), the answer to a request, a reply target
 * one of its pushes claimed for the main thread's delivery (see `AgentThreadData.deliveryRoom`), or that it
 * begins or stops waiting for a reply's settlement, which that delivery then tells it (see `SettleRelay`).
 */
export type AgentThreadMessage =
  | { kind: "ready" }
  | { kind: "failed"; error: string }
  | { kind: "answer"; id: number; value: unknown }
  | { kind: "claimed"; claim: ClaimedKey }
  | { kind: "waiting" | "done"; replyId: string };
