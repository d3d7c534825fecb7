import { z } from "zod";
import { type ChannelAccess, ChannelAccessSchema, DmPolicySchema } from "./access.js";
import type { EnvSetting } from "./config-env.js";
import { didYouMean } from "./key-suggestion.js";

/** One account's validated config: the shared access settings plus the channel's own keys. */
export type ChannelAccountConfig = ChannelAccess & { readonly [key: string]: unknown };

/** A channel's validated config: one entry per account (`default` for the single-account shorthand). */
export interface ChannelSection {
  accounts: Record<string, ChannelAccountConfig>;
}

/** What config validation needs of a channel plugin: its name, schema and environment overrides. */
export interface ChannelConfigSource {
  readonly name: string;
  readonly configSchema: z.ZodType<ChannelAccess, unknown>;
  readonly env?: Readonly<Record<string, string>>;
}

/** The web chat's config: its only sender is the authenticated gateway client, so DMs are open to it. */
export const WebChatConfigSchema = ChannelAccessSchema.extend({
  dmPolicy: DmPolicySchema.default("open"),
  allowFrom: z.array(z.string()).default(["*"]),
}).strict();

/** The web chat is built into the hub; its config is always known. */
export const WEBCHAT_CHANNEL: ChannelConfigSource = { name: "webchat", configSchema: WebChatConfigSchema };

// Without an installed plugin list (unit tests of packages, which know no platform), any channel takes
// the access keys checked and its own keys unchecked; the hub always validates with its plugins.
const ACCESS_ONLY = ChannelAccessSchema.loose();

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Splits one channel's raw config into its accounts: `{ ...keys }` is the
 * single account `accountId` (default `default`); `{ ...shared, accounts: { id:
 * {...} } }` is one account per id, each inheriting the shared keys.
 */
export function splitAccounts(raw: Json): { shorthand: boolean; accounts: Record<string, unknown> } {
  const { accounts, ...shared } = raw;
  if (accounts === undefined) {
    const id = typeof shared.accountId === "string" && shared.accountId !== "" ? shared.accountId : "default";
    return { shorthand: true, accounts: { [id]: shared } };
  }
  if (!isObject(accounts)) return { shorthand: false, accounts: { "": accounts } };
  return {
    shorthand: false,
    accounts: Object.fromEntries(
      Object.entries(accounts).map(([id, own]) => [
        id,
        isObject(own) ? { ...shared, ...own, accountId: id } : own,
      ]),
    ),
  };
}

/**
 * The `channels` section of the hub config: an open record whose entries are
 * validated by the installed channel plugins (`sources`). An unknown channel
 * name is an error naming the installed ones; issues inside an account keep
 * the path the operator wrote (`channels.telegram.botToken` for the shorthand,
 * `channels.telegram.accounts.work.botToken` for an account).
 */
export function channelsSchema(sources: ReadonlyArray<ChannelConfigSource> | undefined) {
  const known = new Map<string, ChannelConfigSource["configSchema"]>([
    [WEBCHAT_CHANNEL.name, WEBCHAT_CHANNEL.configSchema],
  ]);
  for (const source of sources ?? []) known.set(source.name, source.configSchema);
  return z
    .record(z.string(), z.unknown())
    .default({})
    .transform((raw, ctx) => {
      const out: Record<string, ChannelSection> = {};
      for (const [name, value] of Object.entries(raw)) {
        const schema = known.get(name) ?? (sources ? undefined : ACCESS_ONLY);
        if (!schema) {
          const names = [...known.keys()].join(", ");
          const guess = didYouMean([name], known.keys());
          const fix = guess
            ? `${guess} Fix its spelling, remove it, or install its plugin`
            : "remove it, fix its spelling, or install its plugin";
          ctx.addIssue({
            code: "custom",
            path: [name],
            message: `unknown channel "${name}" (installed channels: ${names}); ${fix}`,
            // The sentence says what to do: no generic fix after it (see config-issues.ts).
            params: { saysTheFix: true },
          });
          continue;
        }
        if (!isObject(value)) {
          ctx.addIssue({ code: "custom", path: [name], message: "must be an object of channel settings" });
          continue;
        }
        const split = splitAccounts(value);
        if (Object.keys(split.accounts).length === 0) {
          ctx.addIssue({
            code: "custom",
            path: [name, "accounts"],
            message:
              "is empty, so no account of this channel would run; remove `accounts` to make the keys beside it the account `default`, or add an account (`accounts: { main: { ... } }`)",
            params: { saysTheFix: true },
          });
          continue;
        }
        const accounts: Record<string, ChannelAccountConfig> = {};
        for (const [id, account] of Object.entries(split.accounts)) {
          const at = split.shorthand ? [name] : [name, "accounts", ...(id === "" ? [] : [id])];
          const parsed = schema.safeParse(account);
          if (parsed.success) accounts[id] = parsed.data as ChannelAccountConfig;
          else
            for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, path: [...at, ...issue.path] });
        }
        out[name] = { accounts };
      }
      return out;
    });
}

/**
 * The `channels` section as written in a file, for describing it (the JSON
 * schema, the keys a typo is compared with): each installed channel's keys,
 * plus `accounts` of the same keys.
 */
export function channelsInputSchema(sources: ReadonlyArray<ChannelConfigSource> = []) {
  return z
    .object(
      Object.fromEntries(
        [WEBCHAT_CHANNEL, ...sources].map((p) => [p.name, channelInputSchema(p.configSchema).optional()]),
      ),
    )
    .strict();
}

/** The JSON schema shape of one channel entry: its keys, plus `accounts` of the same keys. */
export function channelInputSchema(schema: z.ZodType): z.ZodType {
  // A schema that post-processes its object (a transform) is described by its input object.
  const object = schema instanceof z.ZodPipe && schema.in instanceof z.ZodObject ? schema.in : schema;
  if (!(object instanceof z.ZodObject)) return schema;
  return object.extend({ accounts: z.record(z.string(), object.partial()).optional() });
}

/**
 * Sets the environment overrides of every plugin (`TELEGRAM_BOT_TOKEN` ->
 * `channels.telegram.botToken`); returns what it set (values never shown: they are credentials).
 */
export function applyChannelEnv(
  merged: Json,
  sources: ReadonlyArray<ChannelConfigSource>,
  env: NodeJS.ProcessEnv,
): EnvSetting[] {
  const applied: EnvSetting[] = [];
  for (const source of sources) {
    for (const [variable, key] of Object.entries(source.env ?? {})) {
      const value = env[variable];
      if (value === undefined || value === "") continue;
      const channels = isObject(merged.channels) ? merged.channels : {};
      merged.channels = channels;
      const entry = isObject(channels[source.name]) ? (channels[source.name] as Json) : {};
      channels[source.name] = entry;
      // With accounts, the variable sets the `default` account's key when there is one, else the shared key.
      const accounts = entry.accounts;
      const useDefault = isObject(accounts) && isObject(accounts.default);
      const target = useDefault ? (accounts.default as Json) : entry;
      target[key] = value;
      const path = ["channels", source.name, ...(useDefault ? ["accounts", "default"] : []), key];
      applied.push({ variable, value, path, shown: false });
    }
  }
  return applied;
}

/** The access settings of one channel account, or undefined when it is not configured. */
export function channelAccess(
  channels: Readonly<Record<string, ChannelSection>>,
  channel: string,
  accountId: string,
): ChannelAccountConfig | undefined {
  return channels[channel]?.accounts[accountId];
}
