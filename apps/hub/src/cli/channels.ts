import { HubError } from "@hub/core";
import type { Command } from "commander";
import type { ChannelReport } from "../supervisor.js";
import { configOf, gatewayAddress, output, via } from "./context.js";
import { callGateway } from "./gateway-client.js";

/**
 * Interactive logins by channel (e.g. WhatsApp's QR pairing): a channel that
 * needs one adds its function here. `hub channels login <channel>` runs it.
 */
export const CHANNEL_LOGINS: Record<string, (command: Command) => Promise<void>> = {};

/** `hub channels status|login`. */
export function registerChannels(program: Command): void {
  const channels = program.command("channels").description("channel accounts");
  channels
    .command("status")
    .description("each channel account's state and last error (from the running hub's gateway)")
    .option("--json", "print JSON")
    .action(async (_opts, command: Command) => {
      const { config } = configOf(command);
      via(`gateway ${config.gateway.host}:${config.gateway.port} with the stored token`);
      const [answer] = await callGateway(gatewayAddress(config), [{ method: "channels.status" }]);
      const list = (answer as { channels: ChannelReport[] }).channels;
      output(command, list, () =>
        list
          .map(
            (c) =>
              `${c.channel}/${c.accountId}: ${c.status.state}${c.status.reason ? ` (${c.status.reason})` : ""}`,
          )
          .join("\n"),
      );
    });
  channels
    .command("login <channel>")
    .description("log a channel account in interactively (channels that need it, e.g. WhatsApp)")
    .action(async (channel: string, _opts, command: Command) => {
      const login = CHANNEL_LOGINS[channel];
      if (!login)
        throw new HubError(
          "login_unsupported",
          `The ${channel} channel has no interactive login${Object.keys(CHANNEL_LOGINS).length ? ` (channels with one: ${Object.keys(CHANNEL_LOGINS).join(", ")})` : ""}; set its credentials in the config file instead.`,
        );
      await login(command);
    });
}
