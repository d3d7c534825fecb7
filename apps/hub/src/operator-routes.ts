import type { HttpRoute } from "@hub/core";
import type { InboundDispatcher } from "@hub/dispatch";
import type { AuthFailureLimiter } from "@hub/gateway";
import type { ReplyDispatcher } from "@hub/reply";
import { controlRoutes } from "./control-api.js";
import type { HubBase } from "./stages/base.js";
import type { EntryStage } from "./stages/entry.js";
import type { SessionStage } from "./stages/session.js";
import type { ChannelSupervisor } from "./supervisor.js";

/** The gateway's HTTP routes: the channels' webhooks (503 while draining), /readyz, /metrics and the control API. */
export function operatorRoutes(
  base: HubBase,
  entry: EntryStage,
  s: SessionStage,
  dispatcher: InboundDispatcher,
  replies: ReplyDispatcher,
  access: {
    token: string;
    channels: () => ReturnType<ChannelSupervisor["statuses"]>;
    /** The gateway's failed logins per address: a token guessed over HTTP counts as over its WebSocket. */
    authFailures: AuthFailureLimiter;
  },
): HttpRoute[] {
  const { token, channels, authFailures } = access;
  const webhooks = entry.channels.flatMap((a) => a.httpRoutes?.() ?? []);
  return [
    ...base.operations.routes(webhooks, channels, token, authFailures),
    ...controlRoutes({
      token,
      authFailures,
      redis: base.redis,
      prefix: base.config.redis.prefix,
      channels,
      model: base.config.agent.model,
      ...s,
      stopRun: (runId) => s.control.stop(runId, "aborted"),
      pairing: dispatcher.pairing,
      replies,
      config: base.config,
    }),
  ];
}
