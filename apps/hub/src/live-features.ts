import type { LiveFeatures } from "@hub/agent";
import { channelAccess, type HubConfig } from "@hub/core";
import type { AdapterRegistry } from "./adapter-registry.js";

/**
 * Live previews and acknowledgement reactions from each channel account's config, where its adapter
 * can do them: a preview needs `capabilities.edit` and `edit` (the delivery process edits); a reaction
 * needs `react`, called from the process that runs the agent (like typing).
 */
export function liveFeatures(config: HubConfig, adapters: AdapterRegistry): LiveFeatures {
  const settings = (channel: string, accountId: string) => channelAccess(config.channels, channel, accountId);
  return {
    previewFor: (ctx) => {
      const adapter = adapters.forAccount(ctx.channel, ctx.accountId);
      return (
        settings(ctx.channel, ctx.accountId)?.streaming === "preview" &&
        adapter?.capabilities.edit === true &&
        adapter.edit !== undefined
      );
    },
    ackReactionFor: (ctx) => {
      const s = settings(ctx.channel, ctx.accountId);
      const emoji = s?.ackReaction;
      if (emoji === undefined || emoji === "off") return undefined;
      if (ctx.chat.type !== "direct" && s?.ackReactionScope !== "all") return undefined;
      return adapters.forAccount(ctx.channel, ctx.accountId)?.react ? emoji : undefined;
    },
    react: async (ctx, emoji, previous) => {
      const adapter = adapters.forAccount(ctx.channel, ctx.accountId);
      const { replyToMessageId: _answered, ...chat } = ctx.replyTarget;
      await adapter?.react?.(chat, ctx.messageId, emoji, previous);
    },
  };
}
