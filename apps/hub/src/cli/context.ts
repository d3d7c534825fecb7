import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  createLogger,
  type HubConfig,
  HubError,
  loadConfig,
  redactUrl,
  resolveStateDir,
  SecretRedactor,
} from "@hub/core";
import { createRedis } from "@hub/queue";
import { ReplyDispatcher } from "@hub/reply";
import type { Command } from "commander";
import type { Redis } from "ioredis";
import { localHealthRecords } from "../health-record.js";
import { channelPlugins } from "../plugins.js";
import { redisAuthRefusal, redisSetting } from "../redis-local.js";
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

/** How long a command waits for Redis to answer before it says so. */
const REDIS_ANSWER_MS = 3000;

/**
 * Runs `work` with a Redis connection to the configured server, closed
 * afterwards. A Redis that does not answer is a clear error at once, not a
 * command that waits forever (the hub itself waits a Redis restart out).
 */
export async function withRedis<T>(config: HubConfig, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = createRedis(config.redis.url, { maxRetriesPerRequest: 1, connectTimeoutMs: REDIS_ANSWER_MS });
  try {
    await answers(redis, config);
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

async function answers(redis: Redis, config: HubConfig): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  // The connection's own error (e.g. ECONNREFUSED) says more than the command's "max retries".
  let refused: Error | undefined;
  redis.on("error", (error: Error) => {
    refused ??= error;
  });
  try {
    await Promise.race([
      redis.ping(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${REDIS_ANSWER_MS / 1000} s`)),
          REDIS_ANSWER_MS,
        );
      }),
    ]);
  } catch (error) {
    const cause = refused ?? (error as Error);
    const setting = redisSetting(config);
    const refusal = redisAuthRefusal(cause, config.redis.url, setting.name);
    if (refusal) throw refusal;
    throw new HubError(
      "redis_unreachable",
      `Redis at ${redactUrl(config.redis.url)} does not answer (${cause.message}); start it, or set ${setting.short} to the hub's Redis ("hub doctor" checks it).`,
      { cause: error },
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The running hub's gateway as this machine knows it: the configured host and
 * port, and the token from config or the one the hub stored in the state dir.
 */
export function gatewayAddress(config: HubConfig): GatewayAddress {
  const stateDir = resolveStateDir();
  const stored = join(stateDir, "gateway-token");
  const storedToken = existsSync(stored) ? readFileSync(stored, "utf8").trim() : "";
  const token = config.gateway.token ?? storedToken;
  const tokenSource = config.gateway.token
    ? "the configured token (gateway.token or HUB_GATEWAY_TOKEN)"
    : storedToken
      ? `the token stored in ${stored}`
      : `no token (none configured, none stored in ${stored})`;
  const host =
    config.gateway.host === "0.0.0.0" || config.gateway.host === "::" ? "127.0.0.1" : config.gateway.host;
  return { host, port: config.gateway.port || listeningGatewayPort(stateDir), token, tokenSource };
}

// `gateway.port: 0` lets the system pick the port: the one a running hub of this machine took, as its health
// record says (its probes answer on its gateway's port); 0 when none runs.
function listeningGatewayPort(stateDir: string): number {
  return localHealthRecords(stateDir).find((record) => record.roles.includes("ingress"))?.port ?? 0;
}

/** Prints `data` as JSON with `--json`, else the human text (made safe for a terminal, see `terminalSafe`). */
export function output(command: Command, data: unknown, text: () => string): void {
  console.log(optionsOf(command).json ? JSON.stringify(data, null, 2) : terminalSafe(text()));
}

// C0 controls but tab and line feed, DEL, and the C1 controls (U+009B is a CSI of its own in some terminals).
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is shown as escapes
const TERMINAL_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Text from outside (a sender's name, a message, a model's answer) as the terminal may print it: control
 * characters are shown as `\u001b`-style escapes, so ESC cannot start a sequence that recolours, hides or
 * rewrites the output, sets the window title or writes the clipboard, and a carriage return cannot
 * overwrite the line.
 */
export function terminalSafe(text: string): string {
  return text.replace(TERMINAL_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * A `--timeout <seconds>` value as a number of seconds above 0; `refused` is added to the refusal's sentence
 * (what the command did not do).
 */
export function timeoutSeconds(raw: string, refused = ""): number {
  const seconds = Number(raw);
  if (!(seconds > 0))
    throw new HubError(
      "bad_timeout",
      `--timeout must be a number of seconds above 0, not "${raw}"${refused}.`,
    );
  return seconds;
}

/**
 * A value printed over several lines (a message): each of its later lines starts with `indent`, so it cannot
 * print what looks like a line of the hub's own.
 */
export function indentLines(text: string, indent: string): string {
  return text.replace(LINE_BREAKS, `\n${indent}`);
}

// Every line break a terminal or a reader may honour.
const LINE_BREAKS = /\r\n|[\n\r\u0085\u2028\u2029]/g;

/** A value printed inside one line (a name): its line breaks become spaces, so it cannot print a line of its own. */
export function oneLine(text: string): string {
  return text.replace(LINE_BREAKS, " ");
}

/** A line on stderr (so `--json` output stays clean) saying where the answer comes from: the gateway, Redis or the state dir. */
export function via(source: string): void {
  console.error(`(from ${source})`);
}

/**
 * A reply dispatcher for commands that send (no delivery worker: the running
 * hub's delivery role sends), once the configured Redis answered.
 */
export async function replySender(config: HubConfig): Promise<ReplyDispatcher> {
  await withRedis(config, async () => {});
  return new ReplyDispatcher({
    redisUrl: config.redis.url,
    prefix: config.redis.prefix,
    logger: createLogger({ level: "silent" }),
    capabilitiesOf: () => undefined,
  });
}
