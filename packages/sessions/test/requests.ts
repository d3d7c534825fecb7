import { finalizeInboundContext, type RunRequest } from "@hub/core";

/** A run request for a Telegram direct message from `peer` (the lane and admission tests). */
export const directRequest = (runId: string, peer: string): RunRequest => ({
  runId,
  ctx: finalizeInboundContext(
    {
      channel: "telegram",
      messageId: runId,
      chat: { type: "direct", id: peer },
      sender: { id: peer },
      body: runId,
      timestamp: 1,
    },
    { agent: { id: "main", dmScope: "per-channel-peer" } },
  ),
});
