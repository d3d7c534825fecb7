import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  type ChannelCheck,
  type HubConfig,
  HubError,
  redactUrl,
  resolveStateDir,
  WEBCHAT_CHANNEL,
} from "@hub/core";
import { createRedis } from "@hub/queue";
import type { Command } from "commander";
import { channelPlugins } from "../plugins.js";
import { redisAuthRefusal, redisSetting } from "../redis-local.js";
import type { ChannelReport } from "../supervisor.js";
import { configOf, gatewayAddress, output, via } from "./context.js";
import { credentialChecks } from "./doctor-channels.js";
import { callGateway, GatewayUnreachableError, GatewayUnresponsiveError } from "./gateway-client.js";

/** One doctor check: `fail` makes `hub doctor` exit 1; `warn` does not. */
export type DoctorCheck = ChannelCheck;

/**
 * `hub doctor [--json]`: the config, Redis (reachable, version, persistence),
 * the state directory's permissions, each channel account's credentials (and
 * webhook) checked against its platform by the channel's plugin, and each
 * channel's connection as the running hub's gateway reports it. Exits 1 when any check fails.
 */
export function registerDoctor(program: Command): void {
  program
    .command("doctor")
    .description("check the config, Redis, the state directory and each channel; exit 1 when a check fails")
    .option("--json", "print JSON")
    .action(async (_opts, command: Command) => {
      const checks = await runChecks(command);
      const failed = checks.some((c) => c.status === "fail");
      output(command, { ok: !failed, checks }, () =>
        checks
          .map(
            (c) =>
              `${c.status === "ok" ? "ok  " : c.status === "warn" ? "warn" : "FAIL"}  ${c.name}: ${c.detail}${c.fix ? `\n      fix: ${c.fix}` : ""}`,
          )
          .join("\n"),
      );
      if (failed) process.exitCode = 1;
    });
}

async function runChecks(command: Command): Promise<DoctorCheck[]> {
  let loaded: ReturnType<typeof configOf>;
  try {
    loaded = configOf(command);
  } catch (error) {
    // Without a config nothing else can be checked.
    return [
      {
        name: "config",
        status: "fail",
        detail: (error as Error).message,
        fix: "correct the keys named above",
      },
    ];
  }
  const { config } = loaded;
  const { host, port } = gatewayAddress(config);
  via(`the config, the state directory, Redis, each channel's platform and the gateway at ${host}:${port}`);
  const checks: DoctorCheck[] = [
    {
      name: "config",
      status: "ok",
      detail: loaded.fromFile ? `${loaded.path} is valid` : "no file; defaults are valid",
    },
  ];
  checks.push(stateDirCheck(resolveStateDir()));
  checks.push(...(await redisChecks(config)));
  if (Object.keys(config.channels).some((name) => name !== WEBCHAT_CHANNEL.name))
    console.error("Checking each channel account with its platform (up to 15 s)…");
  checks.push(...(await credentialChecks(config, channelPlugins)));
  checks.push(...(await channelChecks(config)));
  return checks;
}

/** The state directory exists and only its owner can read it (it holds tokens and transcripts). */
export function stateDirCheck(stateDir: string): DoctorCheck {
  const name = "state directory";
  if (!existsSync(stateDir))
    return {
      name,
      status: "warn",
      detail: `${stateDir} does not exist yet`,
      fix: "it is created owner-only at the first start",
    };
  const mode = statSync(stateDir).mode & 0o777;
  if (mode & 0o077)
    return {
      name,
      status: "fail",
      detail: `${stateDir} is readable by others (mode ${mode.toString(8)})`,
      fix: `chmod 700 ${stateDir}`,
    };
  const token = join(stateDir, "gateway-token");
  if (existsSync(token) && statSync(token).mode & 0o077)
    return { name, status: "fail", detail: `${token} is readable by others`, fix: `chmod 600 ${token}` };
  return { name, status: "ok", detail: `${stateDir} is owner-only` };
}

async function redisChecks(config: HubConfig): Promise<DoctorCheck[]> {
  const redis = createRedis(config.redis.url);
  redis.on("error", () => {});
  try {
    const info = await Promise.race([
      redis.info(),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("no answer within 3 s")), 3000).unref(),
      ),
    ]);
    const field = (key: string) => new RegExp(`^${key}:(.*)$`, "m").exec(info)?.[1]?.trim();
    const version = field("redis_version") ?? "?";
    const checks: DoctorCheck[] = [
      Number.parseInt(version, 10) >= 7
        ? { name: "redis", status: "ok", detail: `Redis ${version} at ${redactUrl(config.redis.url)}` }
        : {
            name: "redis",
            status: "fail",
            detail: `Redis ${version} is too old`,
            fix: "use Redis 7 or newer",
          },
    ];
    const aof = field("aof_enabled") === "1";
    checks.push(
      aof
        ? { name: "redis persistence", status: "ok", detail: "append-only file on" }
        : {
            name: "redis persistence",
            status: "warn",
            detail: "append-only file off: a Redis crash loses the last queued messages and run records",
            fix: 'run Redis with "--appendonly yes" (docker-compose.yml does)',
          },
    );
    return checks;
  } catch (error) {
    const setting = redisSetting(config);
    const refusal = redisAuthRefusal(error as Error, config.redis.url, setting.name);
    return [
      {
        name: "redis",
        status: "fail",
        detail:
          refusal?.message ?? `${redactUrl(config.redis.url)} does not answer (${(error as Error).message})`,
        fix: refusal
          ? `set the password in ${setting.short}`
          : `start Redis 7 (e.g. docker compose up -d redis) or set ${setting.short}`,
      },
    ];
  } finally {
    redis.disconnect();
  }
}

// A hub that answers but refuses this client (its token): the checks before this one still stand.
function refusedByGateway(error: unknown): DoctorCheck[] {
  if (!(error instanceof HubError)) throw error;
  return [
    {
      name: "gateway",
      status: "fail",
      detail: error.message,
      fix: "run doctor with the hub's gateway token: its HUB_GATEWAY_TOKEN, or the same state directory (HUB_STATE_DIR) as the hub",
    },
  ];
}

async function channelChecks(config: HubConfig): Promise<DoctorCheck[]> {
  let channels: ChannelReport[];
  try {
    const [answer] = await callGateway(gatewayAddress(config), [{ method: "channels.status" }]);
    channels = (answer as { channels: ChannelReport[] }).channels;
  } catch (error) {
    if (error instanceof GatewayUnresponsiveError)
      return [{ name: "channels", status: "fail", detail: error.message, fix: "restart the hub" }];
    if (!(error instanceof GatewayUnreachableError)) return refusedByGateway(error);
    return [
      {
        name: "channels",
        status: "warn",
        detail:
          "the hub is not running, so its channels' connections are not shown (credentials are checked above)",
        fix: 'start the hub ("npm start") and run "hub doctor" again to see them',
      },
    ];
  }
  return channels.map((c) => {
    const name = `channel ${c.channel}/${c.accountId}`;
    const reason = c.status.reason ? `: ${c.status.reason}` : "";
    if (c.status.state === "connected") return { name, status: "ok", detail: "connected" };
    if (c.status.state === "failed" || c.status.state === "logged_out")
      return {
        name,
        status: "fail",
        detail: `${c.status.state}${reason}`,
        fix: "correct its credentials in the config and restart the hub",
      };
    return {
      name,
      status: "warn",
      detail: `${c.status.state}${reason}`,
      fix: "check the platform is reachable; the hub keeps retrying",
    };
  });
}
