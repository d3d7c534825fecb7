import type { ChannelAdapter, ChannelPlugin } from "@hub/core";
import { WebChatAdapter } from "@hub/gateway";
import { AdapterRegistry } from "../adapter-registry.js";
import { buildChannelAdapters } from "../adapters.js";
import { channelPlugins } from "../plugins.js";
import type { HubBase } from "./base.js";

/** Stage 1, entry: every channel's adapter (platform I/O), one per enabled account, plus the web chat. */
export interface EntryStage {
  webchat: WebChatAdapter;
  /** The platform channels' adapters (not the web chat). */
  channels: ChannelAdapter[];
  /** Every adapter by channel and account, for delivery and typing. */
  adapters: AdapterRegistry;
}

/** Builds the adapters (not started: admission starts them under supervision). */
export async function buildEntry(
  base: HubBase,
  options: { adapters?: ChannelAdapter[] | undefined; plugins?: ReadonlyArray<ChannelPlugin> | undefined },
): Promise<EntryStage> {
  const webchat = new WebChatAdapter(base.events);
  const channels =
    options.adapters ??
    (await buildChannelAdapters(base.config, options.plugins ?? channelPlugins, {
      redis: base.redis,
      prefix: base.config.redis.prefix,
      logger: base.logger,
      stateDir: base.stateDir,
    }));
  return { webchat, channels, adapters: new AdapterRegistry([webchat, ...channels]) };
}
