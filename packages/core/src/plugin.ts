import type { z } from "zod";
import type { ChannelAccess } from "./access.js";
import type { AdapterStateStore, ChannelAdapter } from "./channel.js";
import type { AccountLease } from "./edge/lease.js";
import type { HubError } from "./errors.js";
import type { HubLogger } from "./logger.js";

/**
 * What the hub did with one inbound message, as the adapter must act on it:
 * - `accepted`: durably admitted (a run, a command, or context); acknowledge it.
 * - `duplicate`: already admitted earlier (a platform retry); acknowledge it.
 * - `ignored`: deliberately not acted on (policy, not addressed to us); acknowledge it.
 * - `rejected`: can never be accepted (malformed, too large); acknowledge and drop it, log once.
 * - `retry`: a transient failure on our side (Redis unreachable); make the platform redeliver
 *   (5xx on a webhook, polling offset held for it).
 */
export type InboundResult =
  | { kind: "accepted"; runId?: string | undefined }
  | { kind: "duplicate" }
  | { kind: "ignored"; reason: string }
  | { kind: "rejected"; reason: string }
  | { kind: "retry"; reason: string };

/** The connection state of one channel account, for the operator and for readiness. */
export type ChannelState = "connecting" | "connected" | "reconnecting" | "failed" | "logged_out" | "stopped";

/** A channel account's connection state, with why and when it changes next. */
export interface ChannelStatus {
  state: ChannelState;
  /** Why it is in this state (the last error, or what the operator must do). */
  reason?: string | undefined;
  /** When the next connection attempt is due (epoch ms), while `reconnecting`. */
  nextRetryAt?: number | undefined;
  /** When it entered this state (epoch ms). */
  since: number;
  /**
   * Set while another hub process of the installation holds this account's connection (one may
   * hold it) and this one takes over when it stops: the account is served, so the hub is ready.
   */
  standby?: true | undefined;
  /**
   * The latest error the account had (the reason of its last reconnecting, failed or
   * logged-out state, and when), kept after it connects again so the operator still sees it.
   */
  lastError?: { reason: string; at: number } | undefined;
  /**
   * While a device is being linked (`hub channels login`): what to show the
   * owner to link it. Only the owner may see it (the gateway strips it for others).
   */
  link?: ChannelLinkCode | undefined;
}

/** A code that links a device to a channel account: a QR code image, or a pairing code to type. */
export interface ChannelLinkCode {
  /** The QR code as an image (`data:image/png;base64,...`). */
  qrImage?: string | undefined;
  /** A pairing code to enter on the phone. */
  pairingCode?: string | undefined;
  /** When it was shown (epoch ms). */
  at: number;
}

/** What the hub gives a plugin's factory besides the account's config. */
export interface ChannelPluginDeps {
  /** The account this adapter serves (`default` for the single-account shorthand). */
  accountId: string;
  logger: HubLogger;
  /** Small durable state for this account (polling offsets, auth state pointers), shared across processes. */
  state: AdapterStateStore;
  /** The hub's state directory (files such as linked-device credentials live under it). */
  stateDir: string;
  /**
   * The hub's Redis (its URL and key prefix), for a plugin that must coordinate
   * across hub processes itself (e.g. a lease so one process holds a linked device).
   */
  redis?: { url: string; prefix: string } | undefined;
  /**
   * The lease of this account's single-holder connection (Telegram polling, a
   * Discord gateway, a WhatsApp socket), at `<prefix>:<channel>:lease:<accountId>`
   * in the hub's Redis: one hub process holds it at a time (`SingleHolder`).
   */
  lease?: ((ttlMs: number) => AccountLease) | undefined;
}

/**
 * One channel as the hub installs it: its name, its config schema (which
 * extends the shared access schema), the environment variables that override
 * its keys, which keys are secrets (redacted from every log line), and the
 * factory that builds one adapter per configured account. Adding a channel is
 * a new package exporting one of these plus one line in the hub's plugin list.
 * The module that exports it should not import the platform SDK itself: the
 * hub loads every installed plugin to read the config.
 */
export interface ChannelPlugin<C extends ChannelAccess = ChannelAccess> {
  /** The channel name (`telegram`, `discord`, ...): the config key and every message's `channel`. */
  readonly name: string;
  /** Validates one account's config (the single-account shorthand and each `accounts.<id>` entry). */
  readonly configSchema: z.ZodType<C, unknown>;
  /** Environment variables that set a key of the default account, e.g. `{ TELEGRAM_BOT_TOKEN: "botToken" }`. */
  readonly env?: Readonly<Record<string, string>>;
  /** Config keys whose values are secrets (tokens, signing secrets): never written to a log. */
  readonly secretKeys?: ReadonlyArray<string>;
  /**
   * Builds the adapter of one account (not started; the hub starts it); rejects with a clear error on bad
   * config. Asynchronous so that a plugin loads its platform SDK here, not when the hub loads the plugin:
   * a hub that runs no Discord does not pay for discord.js (seconds of start-up, tens of megabytes).
   */
  create(config: C, deps: ChannelPluginDeps): Promise<ChannelAdapter>;
  /**
   * What keeps one account from being built that its config alone shows (no bot token, say), each a
   * sentence naming the key to set; none when it can be built. `create` refuses the first, and `hub
   * config validate` lists them all, so an operator learns it before starting the hub.
   */
  configProblems?(config: C, accountId: string): HubError[];
  /**
   * Links one account interactively (`hub channels login <name>`), for channels
   * that pair a device (a QR code or pairing code); resolves once linked.
   */
  login?(config: C, deps: ChannelPluginDeps, options: ChannelLoginOptions): Promise<void>;
  /**
   * Checks one account against the platform itself, without connecting to it
   * (`hub doctor`): its credentials, and its webhook where one is configured.
   * Works whether or not a hub runs; a refused credential is a `fail` naming the key to fix.
   */
  diagnose?(config: C, deps: ChannelPluginDeps, options: { signal: AbortSignal }): Promise<ChannelCheck[]>;
}

/** One finding of `hub doctor`: `fail` makes it exit 1, `warn` does not; `fix` says what to do. */
export interface ChannelCheck {
  name: string;
  status: "ok" | "warn" | "fail";
  detail: string;
  /** What to do about it (for warn and fail). */
  fix?: string | undefined;
}

/** Options of `ChannelPlugin.login`, from the command line. */
export interface ChannelLoginOptions {
  /** Shows a line (or a QR code block) to the person linking. */
  print(text: string): void;
  /** Link with a pairing code for this phone number (country code included) instead of a QR code. */
  phone?: string | undefined;
}

/** Where an account's keys sit in the config (`channels.telegram`, or `channels.telegram.accounts.support`), for messages that name the key to fix. */
export function accountConfigPath(channel: string, accountId: string): string {
  return accountId === "default" ? `channels.${channel}` : `channels.${channel}.accounts.${accountId}`;
}

/**
 * `<path>.<key> or <variable>` for the `default` account, whose keys a channel's environment variables set,
 * and only `<path>.<key>` for another account's (`path` as `accountConfigPath` gives it), so a fix never
 * names a variable that cannot fix it.
 */
export function keyOrVariable(path: string, key: string, variable: string): string {
  const other = path.includes(".accounts.") && !path.endsWith(".accounts.default");
  return other ? `${path}.${key}` : `${path}.${key} or ${variable}`;
}
