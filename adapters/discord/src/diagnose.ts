import type { ChannelCheck } from "@hub/core";
import {
  type APIApplication,
  type APIUser,
  ApplicationFlags,
  DiscordAPIError,
  REST,
  Routes,
} from "discord.js";
import type { DiscordConfig } from "./config.js";

/** Either flag means the Message Content intent is enabled for the bot (verified apps, or under 100 servers). */
const MESSAGE_CONTENT =
  ApplicationFlags.GatewayMessageContent | ApplicationFlags.GatewayMessageContentLimited;

/**
 * `hub doctor` for one Discord bot: the token (GET /users/@me) and the
 * Message Content intent the hub needs (the application's flags from GET
 * /applications/@me; without it the gateway closes with 4014).
 */
export async function diagnoseDiscord(
  config: DiscordConfig,
  at: string,
  signal: AbortSignal,
): Promise<ChannelCheck[]> {
  const name = `${at}: token`;
  const where = "Developer Portal > your application > Bot > Reset Token";
  if (!config.token)
    return [{ name, status: "fail", detail: "not set", fix: `copy ${where} into ${at}.token` }];
  const rest = new REST({ api: config.restApi, retries: 0, timeout: 10_000 }).setToken(config.token);
  try {
    const me = (await rest.get(Routes.user("@me"), { signal })) as APIUser;
    const app = (await rest.get(Routes.currentApplication(), { signal })) as APIApplication;
    const intent: ChannelCheck =
      (app.flags ?? 0) & MESSAGE_CONTENT
        ? { name: `${at}: message content intent`, status: "ok", detail: "enabled" }
        : {
            name: `${at}: message content intent`,
            status: "fail",
            detail: "not enabled: Discord refuses the gateway connection (close 4014)",
            fix: "Developer Portal > your application > Bot > Privileged Gateway Intents: enable Message Content Intent",
          };
    return [{ name, status: "ok", detail: `accepted: the bot is ${me.username} (${me.id})` }, intent];
  } catch (error) {
    if (error instanceof DiscordAPIError && error.status === 401)
      return [
        {
          name,
          status: "fail",
          detail: "Discord refused it (401 Unauthorized)",
          fix: `copy ${where} into ${at}.token`,
        },
      ];
    return [
      {
        name,
        status: "fail",
        detail: `Discord's API at ${config.restApi} could not be checked (${(error as Error).message})`,
        fix: `check this machine reaches ${config.restApi} (proxy, firewall, DNS)`,
      },
    ];
  }
}
