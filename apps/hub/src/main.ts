#!/usr/bin/env node
import { inspect } from "node:util";
import {
  collectConfigSecrets,
  configJsonSchema,
  createLogger,
  HubError,
  loadConfig,
  resolveStateDir,
  SecretRedactor,
} from "@hub/core";
import { PairingStore } from "@hub/dispatch";
import { createRedis } from "@hub/queue";
import { ReplyDispatcher } from "@hub/reply";
import { CHANNELS_USAGE, channelsCommand } from "./channels-command.js";
import { startHub } from "./hub.js";
import { approvePairing } from "./pairing.js";
import { channelPlugins } from "./plugins.js";
import { ensureRedis } from "./redis-local.js";
import { ensureStateDir, resolveGatewayToken } from "./state.js";

const USAGE = `Usage: hub [start] [--config <file>]
       hub config schema                    print the JSON schema of hub.json5
       hub pairing list                     senders waiting for approval
       hub pairing approve <channel> <code> let a sender in (they are told)
       ${CHANNELS_USAGE}`;

/** Every configured secret of this process: no log line and no error printed at exit may contain one. */
const secrets = new SecretRedactor();

function parseArgs(argv: string[]): { command: string[]; config?: string } {
  const command: string[] = [];
  let config: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--config") config = argv[++i];
    else if (arg.startsWith("--config=")) config = arg.slice("--config=".length);
    else if (arg === "-h" || arg === "--help") command.push("help");
    else command.push(arg);
  }
  return { command, ...(config ? { config } : {}) };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const [cmd = "start", sub] = args.command;
  if (cmd === "help") return void console.log(USAGE);
  if (cmd === "config" && sub === "schema")
    return void console.log(JSON.stringify(configJsonSchema(channelPlugins), null, 2));
  if (cmd === "pairing") return pairingCommand(args.command.slice(1), args.config);
  if (cmd === "channels") return channelsCommand(args.command.slice(1), args.config);
  if (cmd !== "start") throw new HubError("usage", `Unknown command "${args.command.join(" ")}".\n${USAGE}`);

  const stateDir = resolveStateDir();
  ensureStateDir(stateDir);
  const { config, path, fromFile } = loadConfig({ path: args.config, plugins: channelPlugins });
  secrets.add(
    collectConfigSecrets(
      config,
      channelPlugins.flatMap((p) => p.secretKeys ?? []),
    ),
  );
  const logger = createLogger({ secrets });
  const localRedis = await ensureRedis(config.redis.url, stateDir, (line) => logger.warn(line));
  const { token, generated, path: tokenPath } = resolveGatewayToken(stateDir, config.gateway.token);
  secrets.add([token]);
  const hub = await startHub(config, { stateDir, token, logger });
  logger.info(
    { config: fromFile ? path : "(defaults)", stateDir, model: config.agent.model, roles: config.roles },
    "hub started",
  );
  if (hub.port) {
    const url = `http://${config.gateway.host.includes(":") ? `[${config.gateway.host}]` : config.gateway.host}:${hub.port}/`;
    if (generated) {
      console.log(
        `\nGateway token (shown once, stored in ${tokenPath}):\n  ${token}\nOpen the web chat: ${url}#token=${token}\n`,
      );
    } else {
      console.log(`\nWeb chat: ${url}  (token in ${tokenPath})\n`);
    }
  }
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping");
    // Runs still going after this are resumed by restart recovery; do not hang the shutdown on them.
    const forced = setTimeout(() => {
      logger.warn("runs still in flight after 15 s; exiting, they will resume after the restart");
      process.exit(0);
    }, 15_000);
    forced.unref();
    await hub.stop();
    localRedis?.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

async function pairingCommand(rest: string[], configPath: string | undefined): Promise<void> {
  const { config } = loadConfig({ path: configPath, plugins: channelPlugins });
  const redis = createRedis(config.redis.url);
  const pairing = new PairingStore(redis, config.redis.prefix);
  const replies = new ReplyDispatcher({
    redisUrl: config.redis.url,
    prefix: config.redis.prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => undefined,
  });
  try {
    const [action, channel, code] = rest;
    if (action === "list") {
      const pending = await pairing.list();
      if (pending.length === 0) console.log("No senders are waiting for approval.");
      for (const p of pending) {
        const age = Math.round((Date.now() - p.createdAt) / 60_000);
        console.log(
          `${p.channel}  ${p.code}  sender ${p.senderId}${p.senderName ? ` (${p.senderName})` : ""}  ${age} min ago`,
        );
      }
      for (const [account, count] of Object.entries(await pairing.turnedAway()))
        console.log(
          `${account}: ${count} more senders were told to try later in the last hour (too many waiting).`,
        );
    } else if (action === "approve" && channel && code) {
      const approved = await approvePairing(pairing, replies, channel, code);
      if (!approved)
        throw new HubError(
          "pairing_unknown",
          `No pending pairing with code ${code} on ${channel}; run "hub pairing list" to see the pending ones.`,
        );
      console.log(`Approved sender ${approved.senderId} on ${channel}; they have been told.`);
    } else {
      throw new HubError("usage", USAGE);
    }
  } finally {
    await replies.close();
    redis.disconnect();
  }
}

main().catch((error) => {
  if (error instanceof HubError) {
    console.error(`hub: ${secrets.redact(error.message)}`);
  } else {
    console.error(secrets.redact(inspect(error)));
  }
  process.exit(1);
});
