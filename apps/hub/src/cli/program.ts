import { Command } from "commander";
import { registerChannels } from "./channels.js";
import { registerChat } from "./chat.js";
import { registerConfig } from "./config.js";
import { registerDeliveries } from "./deliveries.js";
import { registerDoctor } from "./doctor.js";
import { registerPairing } from "./pairing.js";
import { registerSend } from "./send.js";
import { registerSessions } from "./sessions.js";
import { registerStart } from "./start.js";
import { registerStatus } from "./status.js";

/**
 * The `hub` command line. Each command says where its answer comes from:
 * the running hub's gateway (with the configured or stored token: status, channels, doctor's
 * channel checks), Redis (pairing, deliveries, send, queue depths) or the state
 * directory (sessions). One file per command group.
 */
export function createProgram(): Command {
  const program = new Command("hub")
    .description("the hub: a self-hosted multi-channel AI chatbot hub")
    .option("--config <file>", "the configuration file (default: $HUB_CONFIG or <state dir>/hub.json5)")
    .showHelpAfterError()
    .exitOverride();
  registerStart(program);
  registerStatus(program);
  registerDoctor(program);
  registerConfig(program);
  registerSessions(program);
  registerSend(program);
  registerChat(program);
  registerPairing(program);
  registerChannels(program);
  registerDeliveries(program);
  return program;
}
