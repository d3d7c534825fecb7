import { existsSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import JSON5 from "json5";
import { z } from "zod";
import type { ChannelAccessSchema } from "./access.js";
import {
  applyChannelEnv,
  type ChannelConfigSource,
  channelsInputSchema,
  channelsSchema,
} from "./channel-config.js";
import { applyEnvOverrides } from "./config-env.js";
import { describeConfigIssues } from "./config-issues.js";
import { DurationSchema } from "./duration.js";
import { HubError } from "./errors.js";
import { didYouMean } from "./key-suggestion.js";
import { HealthConfigSchema, LifecycleConfigSchema, MetricsConfigSchema } from "./ops-config.js";
import { hashTaggedPrefix } from "./redis-keys.js";
import { RedisNodeUrlSchema, RedisUrlSchema } from "./redis-url.js";
import { knownKeysAt } from "./schema-keys.js";

const ProviderSchema = z
  .object({
    /** Which API the provider speaks: OpenAI-compatible (OpenAI, Ollama, vLLM, LM Studio, OpenRouter) or Anthropic. */
    api: z.enum(["openai", "anthropic"]).default("openai"),
    baseUrl: z.url().optional(),
    apiKey: z.string().min(1).optional(),
    /** More keys (auth profiles): on an auth or rate-limit failure the next one is tried while the failed one cools down. */
    apiKeys: z.array(z.string().min(1)).default([]),
    /**
     * Whether the provider's models take images: `true`, `false`, or the model names that do. Unset: yes for
     * `api: "anthropic"` and for OpenAI's own API (no `baseUrl`), no for other OpenAI-compatible servers.
     */
    vision: z.union([z.boolean(), z.array(z.string().min(1))]).optional(),
    /**
     * Whether the system prompt's operator part (identity, rules, tools, workspace files) is marked for the
     * provider's prompt cache: Anthropic's `cache_control` (OpenAI-compatible APIs cache prefixes by
     * themselves; this changes nothing there).
     */
    promptCache: z.boolean().default(true),
  })
  .strict();

/** Where downloaded attachments are kept and for how long (under `<state dir>/media`, never in Redis). */
const MediaConfigSchema = z
  .object({
    /** Files older than this are removed (hours). */
    retentionHours: z.number().positive().default(24),
    /** The oldest files are removed when all of them together pass this (bytes). */
    maxStoreBytes: z
      .number()
      .int()
      .positive()
      .default(1024 * 1024 * 1024),
    /** Most characters of one text document given to the model (within a quarter of the context window in all). */
    maxDocumentChars: z.number().int().positive().default(50_000),
  })
  .strict()
  .prefault({});

/** The roles a hub process can run (`roles`, `HUB_ROLES`); a process runs all of them by default. */
export const HUB_ROLES = ["ingress", "agent", "delivery"] as const;
/** One of `HUB_ROLES`. */
export type HubRole = (typeof HUB_ROLES)[number];

// Everything but `channels`, whose entries the installed plugins validate.
const BaseConfigSchema = z
  .object({
    gateway: z
      .object({
        host: z.string().min(1).default("127.0.0.1"),
        port: z.number().int().min(0).max(65535).default(18789),
        token: z.string().min(16, "must be at least 16 characters").optional(),
        /** A password the owner can use instead of the token (e.g. in the web chat). */
        password: z.string().min(12, "must be at least 12 characters").optional(),
        /** Largest WebSocket frame accepted, in bytes. */
        maxFrameBytes: z
          .number()
          .int()
          .positive()
          .default(256 * 1024),
        /** More clients with their own tokens and scopes (the main token has every scope). */
        clients: z
          .array(
            z
              .object({
                name: z.string().min(1),
                token: z.string().min(16, "must be at least 16 characters"),
                scopes: z.array(z.enum(["read", "write", "admin", "approvals", "pairing"])).min(1),
                /**
                 * Sessions the client may touch besides its own web chat session: exact session keys,
                 * `prefix*`, or `*` for all (the owner's token and password, and `admin`, touch all).
                 */
                sessions: z.array(z.string().min(1)).default([]),
              })
              .strict(),
          )
          .default([]),
        /** Browser origins allowed besides the gateway's own (e.g. "https://chat.example.com"). */
        allowedOrigins: z.array(z.string()).default([]),
        /**
         * Host names a gateway on loopback answers to besides localhost and IP addresses (a reverse
         * proxy that keeps the public name): exact, ".example.com" for it and its subdomains, "*" any.
         */
        allowedHosts: z.array(z.string().min(1)).default([]),
        /** Open connections in total; more are closed at once, before any authentication. */
        maxConnections: z.number().int().positive().default(2048),
        /** Open connections from one remote address. */
        maxConnectionsPerAddress: z.number().int().positive().default(256),
        /** A connection whose request headers take longer than this (ms) is closed. */
        headersTimeoutMs: z.number().int().min(100).default(10_000),
        /**
         * A WebSocket client is pinged this often (ms) and disconnected when it did not answer the last ping: a
         * client gone without a close (a half-open connection) stops holding its slot.
         */
        pingIntervalMs: z.number().int().min(100).default(30_000),
      })
      .strict()
      .prefault({}),
    agent: z
      .object({
        id: z
          .string()
          .regex(/^[a-z0-9][a-z0-9_-]*$/, "must be lowercase letters, digits, '-' or '_'")
          .default("main"),
        model: z
          .string()
          .regex(
            /^([a-z0-9_-]+\/.+|[A-Za-z0-9_-]+)$/,
            'must be "provider/model", for example "offline/echo" or "openai/gpt-4o-mini"',
          )
          .default("offline/echo"),
        dmScope: z.enum(["main", "per-peer", "per-channel-peer"]).default("per-channel-peer"),
        maxConcurrentRuns: z.number().int().positive().default(8),
        /**
         * Worker threads of this process that run its `agent` role (0: the main thread runs it). Each
         * takes runs as a separate `agent` process would, `maxConcurrentRuns` at a time, so the main
         * thread keeps ingress and delivery and a machine's other cores run the turns.
         */
        threads: z.number().int().min(0).max(32).default(0),
        /** Which tools runs get, and which need the user's approval. */
        tools: z
          .object({
            /** `minimal` (current_time), `standard` (+ session_status, memory), `full` (every tool). */
            profile: z.enum(["minimal", "standard", "full"]).default("standard"),
            allow: z.array(z.string()).default([]),
            deny: z.array(z.string()).default([]),
            /** Per tool: `allow` (default), `deny`, or `ask` (the user approves in chat with a short code). */
            approvals: z.record(z.string(), z.enum(["allow", "deny", "ask"])).default({}),
            /** How long an approval request waits for the user (seconds). */
            approvalTimeoutSeconds: z.number().int().positive().default(120),
            /** `http_fetch` exists only when hosts are listed here (exact host, or `*.example.com`). */
            httpFetchHosts: z.array(z.string().min(1)).default([]),
            /** Ports `http_fetch` may connect to. */
            httpFetchPorts: z.array(z.number().int().min(1).max(65535)).default([80, 443]),
            /** Let `http_fetch` reach loopback, private and link-local addresses (refused by default). */
            httpFetchAllowPrivate: z.boolean().default(false),
            /** `send_message` targets by name, e.g. { ops: { channel: "telegram", chatId: "-100123" } }. */
            sendTargets: z
              .record(
                z.string(),
                z
                  .object({
                    channel: z.string().min(1),
                    accountId: z.string().min(1).default("default"),
                    chatId: z.string().min(1),
                    threadId: z.string().min(1).optional(),
                  })
                  .strict(),
              )
              .default({}),
          })
          .strict()
          .prefault({}),
        /** The agent's workspace (AGENTS.md, SOUL.md, USER.md, MEMORY.md, TOOLS.md); default `<state dir>/workspace`. */
        workspace: z.string().optional(),
        /** Caps on workspace files given to the model. */
        bootstrap: z
          .object({
            perFileChars: z.number().int().positive().default(20_000),
            totalChars: z.number().int().positive().default(60_000),
          })
          .strict()
          .prefault({}),
        /** The model's context window (tokens); older turns are compacted into a summary before it fills up. */
        contextWindowTokens: z.number().int().min(1000).default(128_000),
        /** One person's ids on several channels mapped to one peer, e.g. { ann: ["telegram:123", "discord:456"] }. */
        identityLinks: z
          .record(z.string(), z.array(z.string().regex(/^[a-z][a-z0-9-]*:.+$/, 'must be "channel:senderId"')))
          .default({}),
        /** Models tried in order when the primary fails (overloaded, unreachable, or out of auth profiles). */
        fallbacks: z.array(z.string().min(1)).default([]),
        /** What a message arriving during a run does (per session, `/queue <mode>` changes it). */
        queueMode: z.enum(["steer", "followup", "collect", "interrupt"]).default("steer"),
        runTimeoutSeconds: z.number().int().positive().default(600),
        systemPrompt: z.string().optional(),
        /** How long a dead process holds a session before another process resumes its run (ms). */
        laneLeaseMs: z.number().int().min(500).default(30_000),
        /** Transcribes voice notes and audio (`provider/model` of an OpenAI-compatible provider, e.g. "openai/whisper-1"). */
        transcriptionModel: z
          .string()
          .regex(/^[a-z0-9_-]+\/.+$/, 'must be "provider/model", for example "openai/whisper-1"')
          .optional(),
        /** Delay between words of the offline model, so streaming is visible (0: the answer in one delta). */
        offlineTokenDelayMs: z.number().int().nonnegative().default(15),
      })
      .strict()
      .prefault({}),
    models: z
      .object({
        providers: z.record(z.string(), ProviderSchema).default({}),
        /** Short names for model refs, e.g. { fast: "openai/gpt-4o-mini" }. */
        aliases: z.record(z.string(), z.string()).default({}),
      })
      .strict()
      .prefault({}),
    redis: z
      .object({
        /** Checked below, only when it is used (no `cluster`). */
        url: z.string().default("redis://127.0.0.1:6379"),
        /**
         * Every key starts with it; a Redis Cluster hash tag is added when it has none
         * (`hub` -> `{hub}`), so every key of one installation lives in one slot.
         */
        prefix: z.string().min(1).default("hub"),
        /** Seed nodes of a Redis Cluster (`redis://host:port` each); when set, `url` is not used. */
        cluster: z.array(RedisNodeUrlSchema).optional(),
      })
      .strict()
      .superRefine((redis, ctx) => {
        // With cluster seeds the URL is not used: a wrong REDIS_URL left in the environment must not stop the start.
        if (redis.cluster?.length) return;
        const checked = RedisUrlSchema.safeParse(redis.url);
        for (const issue of checked.error?.issues ?? [])
          ctx.addIssue({ code: "custom", message: issue.message, path: ["url", ...issue.path] });
      })
      .prefault({}),
    /** Where transcripts and session indexes live: files in the state dir, or Redis (no shared disk needed). */
    sessions: z
      .object({ store: z.enum(["files", "redis"]).default("files") })
      .strict()
      .prefault({}),
    delivery: z
      .object({
        maxAttempts: z.number().int().positive().default(8),
        /** A send slower than this is abandoned and retried; keep it well below `leaseMs`. */
        sendTimeoutMs: z.number().int().positive().default(10_000),
        leaseMs: z.number().int().positive().default(30_000),
        /** A segment older than this when its turn to be sent comes (e.g. after a long outage) is not sent. */
        maxAge: DurationSchema.optional(),
        /** The same limit in seconds (the older key); set one of the two. */
        maxAgeSeconds: z.number().int().positive().optional(),
      })
      .strict()
      .refine((d) => d.maxAge === undefined || d.maxAgeSeconds === undefined, {
        message: "set either delivery.maxAge or delivery.maxAgeSeconds, not both",
        path: ["maxAge"],
      })
      .transform(({ maxAge, maxAgeSeconds, ...rest }) => ({
        ...rest,
        /** `maxAge` or `maxAgeSeconds` in milliseconds; 30 minutes by default. */
        maxAgeMs: maxAge ?? (maxAgeSeconds !== undefined ? maxAgeSeconds * 1000 : 30 * 60_000),
      }))
      .prefault({}),
    /** Flood limits per sender and per chat (token buckets in Redis, across processes) and input sizes. */
    limits: z
      .object({
        senderBurst: z.number().int().positive().default(10),
        senderPerMinute: z.number().int().positive().default(30),
        chatBurst: z.number().int().positive().default(30),
        chatPerMinute: z.number().int().positive().default(120),
        maxAttachmentBytes: z
          .number()
          .int()
          .positive()
          .default(20 * 1024 * 1024),
      })
      .strict()
      .prefault({}),
    media: MediaConfigSchema,
    metrics: MetricsConfigSchema,
    health: HealthConfigSchema,
    lifecycle: LifecycleConfigSchema,
    /** Which roles this process runs; all by default. */
    roles: z
      .array(z.enum(HUB_ROLES))
      .min(1)
      .default([...HUB_ROLES]),
  })
  .strict();

/**
 * The whole hub configuration, as read from `hub.json5` plus environment
 * overrides; `channels` is validated by the installed channel plugins (without
 * a plugin list, its access keys are checked and its other keys are not).
 */
export function hubConfigSchema(plugins?: ReadonlyArray<ChannelConfigSource>) {
  return BaseConfigSchema.extend({
    /**
     * One entry per channel, validated by its installed plugin: the channel's
     * keys for one account, or shared keys plus `accounts.<id>` for several.
     */
    channels: channelsSchema(plugins),
  })
    .strict()
    .superRefine(checkSendTargets);
}

// A `send_message` target names a channel account the config has (a misspelt one would only fail when the
// agent sends, long after the start).
function checkSendTargets(
  config: { agent: { tools: { sendTargets: Record<string, { channel: string; accountId: string }> } } } & {
    channels: Record<string, { accounts: Record<string, unknown> }>;
  },
  ctx: z.RefinementCtx,
): void {
  const channels = ["webchat", ...Object.keys(config.channels)];
  for (const [name, target] of Object.entries(config.agent.tools.sendTargets)) {
    const at = ["agent", "tools", "sendTargets", name];
    if (!channels.includes(target.channel)) {
      const guess = didYouMean([target.channel], channels);
      ctx.addIssue({
        code: "custom",
        path: [...at, "channel"],
        message: `names channel "${target.channel}", which is not configured (configured: ${channels.join(", ")})${guess ? `; ${guess}` : ""}`,
      });
      continue;
    }
    const accounts = config.channels[target.channel]?.accounts;
    if (accounts && !(target.accountId in accounts))
      ctx.addIssue({
        code: "custom",
        path: [...at, "accountId"],
        message: `names account "${target.accountId}" of ${target.channel}, which has ${Object.keys(accounts).join(", ")}`,
      });
  }
}

/** The hub configuration schema without installed plugins (only the access keys are checked). */
export const HubConfigSchema = hubConfigSchema();
/** The validated hub configuration. */
export type HubConfig = z.infer<typeof HubConfigSchema>;
/** The configuration as written in a file (defaults not yet applied). */
export type HubConfigInput = Omit<z.input<typeof HubConfigSchema>, "channels"> & {
  /** Channel name -> its keys (one account) or shared keys plus `accounts`. */
  channels?: Record<string, z.input<typeof ChannelAccessSchema> & Record<string, unknown>>;
};

/** The state directory: `HUB_STATE_DIR`, or `~/.hub`. */
export function resolveStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.HUB_STATE_DIR ?? join(homedir(), ".hub"));
}

type Json = { [key: string]: unknown };

/**
 * The Redis the hub connects to, as every part of it reads it: `redis.url`
 * becomes the cluster's seed list (comma-separated; a list always ends up
 * with a comma, so one seed is a cluster too) when `redis.cluster` is set, and
 * the prefix carries a hash tag.
 */
function withRedisTarget(config: HubConfig): HubConfig {
  const seeds = config.redis.cluster;
  const url = seeds?.length ? `${seeds.join(",")}${seeds.length === 1 ? "," : ""}` : config.redis.url;
  return { ...config, redis: { ...config.redis, url, prefix: hashTaggedPrefix(config.redis.prefix) } };
}

/**
 * Validates raw config (file contents plus env overrides). Unknown keys and
 * wrong types throw a `HubError` naming each path (and the environment
 * variable that set it, if one did) and how to fix it.
 */
export function parseConfig(
  raw: unknown,
  source = "config",
  env: NodeJS.ProcessEnv = {},
  plugins?: ReadonlyArray<ChannelConfigSource>,
): HubConfig {
  const merged: Json = structuredClone((raw ?? {}) as Json);
  const fromEnv = [...applyEnvOverrides(merged, env), ...applyChannelEnv(merged, plugins ?? [], env)];
  const result = hubConfigSchema(plugins).safeParse(merged);
  if (result.success) return withRedisTarget(result.data);
  const written = BaseConfigSchema.extend({ channels: channelsInputSchema(plugins ?? []) });
  const knownKeys = (path: readonly PropertyKey[]) => knownKeysAt(written, path);
  throw new HubError("config_invalid", describeConfigIssues(result.error.issues, source, fromEnv, knownKeys));
}

/**
 * Loads the configuration: the JSON5 file at `path` (or `HUB_CONFIG`, or
 * `<state dir>/hub.json5`; a missing default file means "all defaults"),
 * then environment overrides, then validation.
 */
export function loadConfig(
  options: {
    path?: string | undefined;
    env?: NodeJS.ProcessEnv;
    /** The installed channel plugins, which validate `channels` and add their environment overrides. */
    plugins?: ReadonlyArray<ChannelConfigSource>;
  } = {},
): {
  config: HubConfig;
  path: string;
  fromFile: boolean;
} {
  const env = options.env ?? process.env;
  const explicit = options.path ?? (env.HUB_CONFIG || undefined);
  const path = resolve(explicit ?? join(resolveStateDir(env), "hub.json5"));
  const fromFile = existsSync(path);
  const named = !options.path && env.HUB_CONFIG ? "HUB_CONFIG" : "--config";
  if (!fromFile && explicit) {
    throw new HubError(
      "config_missing",
      `The configuration file ${path} does not exist; create it, or ${options.path ? "drop --config" : "unset HUB_CONFIG"} to use the defaults.`,
    );
  }
  const raw = fromFile ? readConfigFile(path, named) : {};
  return { config: parseConfig(raw, path, env, options.plugins), path, fromFile };
}

// The file's JSON5 (an empty file is the defaults); a clear sentence for what cannot be read.
function readConfigFile(path: string, named: string): unknown {
  if (statSync(path).isDirectory()) {
    throw new HubError(
      "config_unreadable",
      `${path} is a directory; point ${named} at a JSON5 file such as ${join(path, "hub.json5")}.`,
    );
  }
  const text = readFileSync(path, "utf8");
  if (text.trim() === "") return {};
  try {
    return JSON5.parse(text);
  } catch (error) {
    throw new HubError(
      "config_unreadable",
      `The configuration file ${path} could not be read as JSON5 (${(error as Error).message}); the hub reads JSON5 (JSON with comments), not YAML: fix the syntax and start again.`,
    );
  }
}

/** The JSON schema of the configuration file, generated from the zod schemas of the hub and every plugin. */
export function configJsonSchema(plugins: ReadonlyArray<ChannelConfigSource> = []): unknown {
  const schema = z.toJSONSchema(hubConfigSchema(plugins), { io: "input", unrepresentable: "any" }) as {
    properties: Record<string, unknown>;
  };
  schema.properties.channels = z.toJSONSchema(channelsInputSchema(plugins), {
    io: "input",
    unrepresentable: "any",
  });
  return schema;
}
