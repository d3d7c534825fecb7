#!/usr/bin/env node
import { configJsonSchema, createLogger, HubError, loadConfig, resolveStateDir } from "@hub/core";
import { startHub } from "./hub.js";
import { ensureRedis } from "./redis-local.js";
import { ensureStateDir, resolveGatewayToken } from "./state.js";

const USAGE = `Usage: hub [start] [--config <file>]
       hub config schema     print the JSON schema of hub.json5`;

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
    return void console.log(JSON.stringify(configJsonSchema(), null, 2));
  if (cmd !== "start") throw new HubError("usage", `Unknown command "${args.command.join(" ")}".\n${USAGE}`);

  const stateDir = resolveStateDir();
  ensureStateDir(stateDir);
  const { config, path, fromFile } = loadConfig({ path: args.config });
  const logger = createLogger();
  const localRedis = await ensureRedis(config.redis.url, stateDir, (line) => logger.warn(line));
  const { token, generated, path: tokenPath } = resolveGatewayToken(stateDir, config.gateway.token);
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

main().catch((error) => {
  if (error instanceof HubError) {
    console.error(`hub: ${error.message}`);
  } else {
    console.error(error);
  }
  process.exit(1);
});
