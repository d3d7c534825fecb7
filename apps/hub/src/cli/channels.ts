import type { Command } from "commander";
import { loginChannel } from "../channels-command.js";
import type { ChannelReport } from "../supervisor.js";
import { channelLine } from "./channel-line.js";
import { configOf, gatewayAddress, optionsOf, output, via } from "./context.js";
import { callGateway } from "./gateway-client.js";

/** `hub channels status|login`. */
export function registerChannels(program: Command): void {
  const channels = program.command("channels").description("channel accounts");
  channels
    .command("status")
    .description("each channel account's state and last error (from the running hub's gateway)")
    .option("--json", "print JSON")
    .action(async (_opts, command: Command) => {
      const { config } = configOf(command);
      const address = gatewayAddress(config);
      via(`gateway ${config.gateway.host}:${address.port} with ${address.tokenSource}`);
      const [answer] = await callGateway(address, [{ method: "channels.status" }]);
      const list = (answer as { channels: ChannelReport[] }).channels;
      output(command, list, () => list.map((c) => channelLine(c)).join("\n"));
    });
  // A channel whose plugin has `login` (e.g. WhatsApp: QR code, or a pairing code with --phone) links a device here.
  channels
    .command("login <channel>")
    .description(
      "link a channel account's device interactively (WhatsApp: QR code, or a pairing code with --phone)",
    )
    .option("--account <id>", "the account to link", "default")
    .option("--phone <number>", "show a pairing code for this phone number instead of a QR code")
    .action(async (channel: string, opts: { account: string; phone?: string }, command: Command) => {
      await loginChannel(channel, opts, optionsOf(command).config);
    });
}
