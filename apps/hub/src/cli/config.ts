import {
  configJsonSchema,
  configWarnings,
  createLogger,
  type HubConfig,
  HubError,
  parseLogLevel,
  WEBCHAT_CHANNEL,
} from "@hub/core";
import type { Command } from "commander";
import { createModelResolver } from "../models.js";
import { channelPlugins } from "../plugins.js";
import { configOf, output } from "./context.js";
import { refuseOpenGatewayWithoutToken } from "./start.js";

/** `hub config schema` and `hub config validate` (both offline: no gateway, no Redis). */
export function registerConfig(program: Command): void {
  const config = program.command("config").description("the configuration file (offline)");
  config
    .command("schema")
    .description("print the JSON schema of hub.json5")
    .action(() => console.log(JSON.stringify(configJsonSchema(channelPlugins), null, 2)));
  config
    .command("validate")
    .description(
      "check the configuration file and environment overrides; exit 1 with each problem and its fix",
    )
    .option("--json", "print JSON")
    .action((_opts, command: Command) => {
      const { path, fromFile, config: parsed } = configOf(command);
      // The environment's other setting hub start reads before anything else.
      if (process.env.HUB_LOG_LEVEL) parseLogLevel(process.env.HUB_LOG_LEVEL, "HUB_LOG_LEVEL");
      const problems = [...startRefusals(parsed), ...accountProblems(parsed)];
      if (problems.length > 0)
        throw new HubError(
          "config_invalid",
          `${fromFile ? path : "The configuration"} would not start as it is:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
        );
      const channels = Object.keys(parsed.channels);
      const warnings = configWarnings(parsed);
      output(command, { valid: true, path: fromFile ? path : null, channels, warnings }, () =>
        [
          fromFile
            ? `${path} is valid (channels: ${channels.join(", ") || "none"}).`
            : `No configuration file at ${path}; the defaults are valid.`,
          ...warnings.map((w) => `Warning: ${w}`),
        ].join("\n"),
      );
    });
}

/**
 * What `hub start` refuses before it starts anything, from the config alone: a model (or fallback) that names
 * no configured provider or alias, a gateway others can reach without a token.
 */
function startRefusals(config: HubConfig): string[] {
  const checks = [
    () => createModelResolver(config, createLogger({ level: "silent" })),
    () => refuseOpenGatewayWithoutToken(config),
  ];
  const refusals: string[] = [];
  for (const check of checks) {
    try {
      check();
    } catch (error) {
      if (!(error instanceof HubError)) throw error;
      refusals.push(error.message);
    }
  }
  return refusals;
}

/**
 * What keeps an enabled channel account from being built, from its config alone (a missing token): the
 * hub would start without that channel (failed), so validate says it first.
 */
function accountProblems(config: HubConfig): string[] {
  const problems: string[] = [];
  for (const [name, section] of Object.entries(config.channels)) {
    const plugin = channelPlugins.find((p) => p.name === name);
    if (name === WEBCHAT_CHANNEL.name || !plugin?.configProblems) continue;
    for (const [accountId, account] of Object.entries(section.accounts)) {
      if (!account.enabled) continue;
      const parsed = plugin.configSchema.parse(account);
      for (const problem of plugin.configProblems(parsed, accountId)) problems.push(problem.message);
    }
  }
  return problems;
}
