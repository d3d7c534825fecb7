import { createLogger, parseConfig } from "@hub/core";
import { describe, expect, it } from "vitest";
import { channelPlugins } from "../../../apps/hub/src/plugins.js";
import { type SlackAdapter, slackPlugin } from "../src/index.js";
import { memoryState } from "./harness.js";

const parse = (raw: unknown, env: NodeJS.ProcessEnv = {}) =>
  parseConfig(raw, "hub.json5", env, channelPlugins);
const deps = (accountId: string) => ({
  accountId,
  logger: createLogger({ level: "silent" }),
  state: memoryState(),
  stateDir: "/tmp",
});

describe("the Slack plugin", () => {
  it("is installed in the hub and reads channels.slack with SLACK_* environment overrides", () => {
    const config = parse(
      {
        channels: {
          slack: { dmPolicy: "allowlist", allowFrom: ["U1"], channels: { C1: { requireMention: false } } },
        },
      },
      { SLACK_BOT_TOKEN: "xoxb-env", SLACK_SIGNING_SECRET: "secret-env", SLACK_APP_TOKEN: "xapp-env" },
    );
    const account = config.channels.slack?.accounts.default;
    expect(account).toMatchObject({
      mode: "http",
      botToken: "xoxb-env",
      signingSecret: "secret-env",
      appToken: "xapp-env",
      apiUrl: "https://slack.com/api/",
      // Slack's `channels` is the shared `groups` map the access policy reads.
      groups: { C1: { requireMention: false } },
    });
    expect(slackPlugin.secretKeys).toEqual(["botToken", "signingSecret", "appToken"]);
  });

  it("stops on a misspelt key with its path", () => {
    expect(() => parse({ channels: { slack: { botTokne: "x" } } })).toThrow(/channels\.slack.*botTokne/s);
    expect(() => parse({ channels: { slack: { mode: "websocket" } } })).toThrow(/channels\.slack\.mode/);
  });

  it("gives every account its own Events URL and names a missing token's key", async () => {
    const config = parse({
      channels: {
        slack: {
          signingSecret: "s",
          accounts: { default: { botToken: "xoxb-a" }, acme: { botToken: "xoxb-b" }, bare: {} },
        },
      },
    });
    const accounts = config.channels.slack?.accounts ?? {};
    const paths = [];
    for (const id of ["default", "acme"]) {
      const adapter = (await slackPlugin.create(accounts[id] as never, deps(id))) as SlackAdapter;
      paths.push(adapter.httpRoutes().map((r) => r.path));
    }
    expect(paths).toEqual([["/slack/events"], ["/slack/events/acme"]]);
    await expect(slackPlugin.create(accounts.bare as never, deps("bare"))).rejects.toThrow(
      "channels.slack.accounts.bare is configured without a bot token",
    );
  });
});
