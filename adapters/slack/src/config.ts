import { ChannelAccessSchema, GroupConfigSchema, keyOrVariable, UniformPacingSchema } from "@hub/core";
import { z } from "zod";

/** Slack's Web API root; Bolt posts `{apiUrl}{method}`. */
export const SLACK_API_URL = "https://slack.com/api/";

/**
 * One Slack account (`channels.slack` or `channels.slack.accounts.<id>`):
 * how events arrive (`http` Events API on the hub's server, or `socket` mode),
 * the tokens, and which Slack channels answer without a mention. `channels`
 * is Slack's name for the shared `groups` map; both are accepted and merged.
 */
export const SlackConfigSchema = ChannelAccessSchema.extend({
  /** `http`: Slack POSTs events to `<hub>/slack/events`; `socket`: the hub dials Slack (no public URL needed). */
  mode: z.enum(["http", "socket"]).default("http"),
  /** Bot token (`xoxb-...`), from OAuth & Permissions. */
  botToken: z.string().min(1).optional(),
  /** Signing secret (Basic Information → App Credentials); required in `http` mode. */
  signingSecret: z.string().min(1).optional(),
  /** App-level token (`xapp-...`) with `connections:write`; required in `socket` mode. */
  appToken: z.string().min(1).optional(),
  /** Slack's Web API root (tests point it at a fake). */
  apiUrl: z.url().default(SLACK_API_URL),
  /** The path the Events API posts to on the hub's server: `/slack/events` (account `<id>`: `/slack/events/<id>`). */
  eventsPath: z.string().startsWith("/").optional(),
  /** Slack channels by id (`C...`), e.g. `{ C0123: { requireMention: false } }`; same as `groups`. */
  channels: z.record(z.string(), GroupConfigSchema).default({}),
  /** Slack shows :eyes: on the message it works on; in DMs only unless `ackReactionScope: "all"`. */
  ackReaction: z.string().min(1).default("eyes"),
  /** What an edited message does: nothing (`ignore`) or a new turn (`as-new`). */
  editedMessages: z.enum(["ignore", "as-new"]).default("ignore"),
  /** Reply pacing; unset keys keep Slack's limits (1 message per second per channel, 20/s per workspace). */
  pacing: UniformPacingSchema.optional(),
})
  .strict()
  .transform((c) => ({ ...c, groups: { ...c.channels, ...c.groups } }));

/** A validated Slack account config (`groups` already holds `channels`). */
export type SlackConfig = z.output<typeof SlackConfigSchema>;

/** Environment variables that set keys of the default Slack account. */
export const SLACK_ENV: Readonly<Record<string, string>> = {
  SLACK_BOT_TOKEN: "botToken",
  SLACK_SIGNING_SECRET: "signingSecret",
  SLACK_APP_TOKEN: "appToken",
};

/**
 * The key a Slack account's mode needs and lacks, as a sentence naming it (`at`: the account's config
 * path), or undefined: HTTP mode verifies each request with the signing secret, socket mode connects
 * with an app-level token.
 */
export function missingModeKey(
  config: {
    mode?: "http" | "socket" | undefined;
    signingSecret?: string | undefined;
    appToken?: string | undefined;
  },
  at: string,
): string | undefined {
  const mode = config.mode ?? "http";
  if (mode === "http" && !config.signingSecret)
    return `Slack HTTP mode needs ${keyOrVariable(at, "signingSecret", "SLACK_SIGNING_SECRET")}, from the app's Basic Information page.`;
  if (mode === "socket" && !config.appToken?.startsWith("xapp-"))
    return `Slack socket mode needs ${keyOrVariable(at, "appToken", "SLACK_APP_TOKEN")}: an app-level token starting with "xapp-" with the connections:write scope.`;
  return undefined;
}
