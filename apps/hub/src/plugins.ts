import { type ChannelPlugin, collectConfigSecrets, type HubConfig } from "@hub/core";
import { discordPlugin } from "@hub/discord/plugin";
import { slackPlugin } from "@hub/slack/plugin";
import { telegramPlugin } from "@hub/telegram/plugin";
import { whatsappPlugin } from "@hub/whatsapp/plugin";

/**
 * The channel plugins this hub installs: they validate `channels.<name>`
 * (and `channels.<name>.accounts.<id>`), add their environment overrides and
 * their schema to `hub config schema`, and build one adapter per enabled account.
 *
 * Adding a channel is one line here plus its package (adapters/<name>, exporting
 * a `ChannelPlugin` from `@hub/core`'s contract, added to apps/hub's
 * dependencies). Its conformance harness is exported from its package's
 * `./conformance` entry and run by `@hub/conformance` (see that package's index).
 */
export const channelPlugins: ReadonlyArray<ChannelPlugin> = [
  telegramPlugin,
  discordPlugin,
  slackPlugin,
  whatsappPlugin,
];

/** Every secret `config` holds, the installed plugins' own secret keys included: what a log line never shows. */
export function configSecrets(config: HubConfig): string[] {
  return collectConfigSecrets(
    config,
    channelPlugins.flatMap((p) => p.secretKeys ?? []),
  );
}
