import { finalizeInboundContext, type RunRequest } from "@hub/core";

/** A run request for a Telegram direct message from `peer` (the lane, admission and runner tests). */
export const directRequest = (runId: string, peer: string, body = runId): RunRequest => ({
  runId,
  ctx: finalizeInboundContext(
    {
      channel: "telegram",
      messageId: runId,
      chat: { type: "direct", id: peer },
      sender: { id: peer },
      body,
      timestamp: 1,
    },
    { agent: { id: "main", dmScope: "per-channel-peer" } },
  ),
});
