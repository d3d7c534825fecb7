import { configJsonSchema, configWarnings } from "@hub/core";
import type { Command } from "commander";
import { channelPlugins } from "../plugins.js";
import { configOf, output } from "./context.js";

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
