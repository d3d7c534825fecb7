import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger, type HubConfig, loadConfig, resolveStateDir, SecretRedactor } from "@hub/core";
import { createRedis } from "@hub/queue";
import { ReplyDispatcher } from "@hub/reply";
import type { Command } from "commander";
import type { Redis } from "ioredis";
import { channelPlugins } from "../plugins.js";
import type { GatewayAddress } from "./gateway-client.js";

/** Every configured secret of this process: no log line and no error printed at exit may contain one. */
export const secrets = new SecretRedactor();

/** Options every command accepts (set on the program). */
export interface GlobalOptions {
  config?: string;
  json?: boolean;
}

/** The options of a command together with the program's (`--config`). */
export function optionsOf(command: Command): GlobalOptions {
  return command.optsWithGlobals<GlobalOptions>();
}

/** Loads and validates the config the command names (or the default one). */
export function configOf(command: Command): { config: HubConfig; path: string; fromFile: boolean } {
  return loadConfig({ path: optionsOf(command).config, plugins: channelPlugins });
}

/** Runs `work` with a Redis connection to the configured server, closed afterwards. */
export async function withRedis<T>(config: HubConfig, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = createRedis(config.redis.url);
  try {
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

/**
 * The running hub's gateway as this machine knows it: the configured host and
 * port, and the token from config or the one the hub stored in the state dir.
 */
export function gatewayAddress(config: HubConfig): GatewayAddress {
  const stored = join(resolveStateDir(), "gateway-token");
  const token = config.gateway.token ?? (existsSync(stored) ? readFileSync(stored, "utf8").trim() : "");
  const host =
    config.gateway.host === "0.0.0.0" || config.gateway.host === "::" ? "127.0.0.1" : config.gateway.host;
  return { host, port: config.gateway.port, token };
}

/** Prints `data` as JSON with `--json`, else the human text. */
export function output(command: Command, data: unknown, text: () => string): void {
  console.log(optionsOf(command).json ? JSON.stringify(data, null, 2) : text());
}

/** A line on stderr (so `--json` output stays clean) saying where the answer comes from: the gateway, Redis or the state dir. */
export function via(source: string): void {
  console.error(`(from ${source})`);
}

/** A reply dispatcher for commands that send (no delivery worker: the running hub's delivery role sends). */
export function replySender(config: HubConfig): ReplyDispatcher {
  return new ReplyDispatcher({
    redisUrl: config.redis.url,
    prefix: config.redis.prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => undefined,
  });
}
