import { join } from "node:path";
import {
  configWarnings,
  createLogger,
  describeError,
  type HubConfig,
  HubError,
  type HubLogger,
  loadConfig,
  resolveStateDir,
} from "@hub/core";
import { isLoopbackHost } from "@hub/gateway";
import type { Command } from "commander";
import { writeHealthRecord } from "../health-record.js";
import { type RunningHub, startHub } from "../hub.js";
import { logLibraryWarnings } from "../library-warnings.js";
import { handleSignals } from "../lifecycle.js";
import { channelPlugins, configSecrets } from "../plugins.js";
import { ensureRedis, redisSetting } from "../redis-local.js";
import { ensureStateDir, resolveGatewayToken } from "../state.js";
import { tuneV8 } from "../v8-tuning.js";
import { optionsOf, secrets } from "./context.js";

/** `hub start [--config <file>] [--role <roles>]`: runs the hub in the foreground until SIGTERM. */
export function registerStart(program: Command): void {
  program
    .command("start", { isDefault: true })
    .description("run the hub (all roles, or the ones --role names) until SIGTERM")
    .option(
      "--role <roles>",
      "comma-separated roles this process runs: ingress, agent, delivery (default: all)",
    )
    // As the default command, start is handed any word that is no command: that is a typo, not an argument.
    .allowExcessArguments(true)
    .action(async (opts: { role?: string }, command: Command) => {
      if (command.args.length > 0) throw unknownCommand(command.args[0] as string, program);
      const env = opts.role ? { ...process.env, HUB_ROLES: opts.role } : process.env;
      await startCommand(optionsOf(command).config, env);
    });
}

async function startCommand(configPath: string | undefined, env: NodeJS.ProcessEnv): Promise<void> {
  tuneV8();
  const stateDir = resolveStateDir();
  ensureStateDir(stateDir);
  const { config, path, fromFile } = loadConfig({ path: configPath, env, plugins: channelPlugins });
  secrets.add(configSecrets(config));
  const logger = createLogger({ secrets });
  logLibraryWarnings(logger);
  for (const warning of configWarnings(config)) logger.warn(warning);
  refuseOpenGatewayWithoutToken(config);
  const redisAt = redisSetting(config, { env, path }).name;
  const localRedis = await ensureRedis(config.redis.url, stateDir, (line) => logger.warn(line), redisAt);
  const { token, generated, path: tokenPath } = resolveGatewayToken(stateDir, config.gateway.token);
  secrets.add([token]);
  const hub = await startHub(config, {
    stateDir,
    token,
    logger,
    agentThreads: { configPath: fromFile ? path : undefined },
  });
  const forgetRecord = recordProbes(stateDir, hub, config.roles, logger);
  logger.info(
    {
      config: fromFile ? path : "(defaults)",
      stateDir,
      model: config.agent.model,
      roles: config.roles,
      probes: `${hub.probes.host}:${hub.probes.port}`,
    },
    "hub started",
  );
  if (hub.port) {
    const host = config.gateway.host.includes(":") ? `[${config.gateway.host}]` : config.gateway.host;
    const url = `http://${host}:${hub.port}/`;
    if (generated) {
      console.log(
        `\nGateway token (shown once, stored in ${tokenPath}):\n  ${token}\nOpen the web chat: ${url}#token=${token}\n`,
      );
    } else {
      // A token set in the config or the environment is never written to the state directory.
      const where = config.gateway.token
        ? "the gateway.token or HUB_GATEWAY_TOKEN you set"
        : `in ${tokenPath}`;
      console.log(`\nWeb chat: ${url}  (token ${where})\n`);
    }
  }
  handleSignals({
    hub,
    logger,
    drainMs: config.lifecycle.drainSeconds * 1000,
    reload: () => hub.operations.reload(fromFile ? path : undefined, channelPlugins),
    afterStop: async () => {
      forgetRecord();
      await localRedis?.stop();
    },
  });
}

// Only the health check reads it: a file this user cannot write is a warning, never a stop.
function recordProbes(
  stateDir: string,
  hub: RunningHub,
  roles: ReadonlyArray<string>,
  logger: HubLogger,
): () => void {
  try {
    return writeHealthRecord(stateDir, hub.probes, roles);
  } catch (error) {
    logger.warn(
      { err: describeError(error) },
      `could not record this process's probe address for the health check in ${join(stateDir, "health")}; make that directory writable by the hub's user (until then the check asks HUB_GATEWAY_PORT or 18789 only when no process has a record there)`,
    );
    return () => {};
  }
}

/**
 * Refuses a gateway others can reach without a token its operator chose: a token generated into the state
 * directory (the loopback default) would be one nobody set on purpose, printed to a log. `hub config validate`
 * says it too.
 */
export function refuseOpenGatewayWithoutToken(config: HubConfig): void {
  if (!config.roles.includes("ingress") || isLoopbackHost(config.gateway.host) || config.gateway.token)
    return;
  throw new HubError(
    "gateway_insecure",
    `Refusing to listen on ${config.gateway.host} without a gateway token; set HUB_GATEWAY_TOKEN (or gateway.token) to a secret of at least 16 characters, e.g. the output of "openssl rand -hex 24", or listen on 127.0.0.1.`,
  );
}

function unknownCommand(word: string, program: Command): HubError {
  const names = program.commands.map((c) => c.name()).join(", ");
  return new HubError(
    "unknown_command",
    `"${word}" is not a hub command (commands: ${names}); run "hub --help" for what each does.`,
  );
}
