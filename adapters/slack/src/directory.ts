import type { HubLogger } from "@hub/core";
import type { WebClient } from "@slack/web-api";
import { z } from "zod";
import type { SlackNames } from "./normalize.js";

const CACHE_MS = 60 * 60 * 1000;
const CACHE_MAX = 5000;
/** Names are nice to have: admission never waits longer than this for them. */
const LOOKUP_BUDGET_MS = 1000;

const UserInfoSchema = z.looseObject({
  user: z.looseObject({
    name: z.string().optional(),
    real_name: z.string().optional(),
    profile: z
      .looseObject({ display_name: z.string().optional(), real_name: z.string().optional() })
      .optional(),
  }),
});
const ConversationInfoSchema = z.looseObject({
  channel: z.looseObject({ name: z.string().optional(), is_im: z.boolean().optional() }),
});

interface Entry<T> {
  value: T;
  at: number;
}

/**
 * Display names of users (`users.info`) and channels (`conversations.info`), cached for an hour.
 * A lookup that fails or is slow leaves the name out; it never holds up admission.
 */
export class SlackDirectory {
  readonly #users = new Map<string, Entry<{ name?: string; username?: string }>>();
  readonly #channels = new Map<string, Entry<string | undefined>>();

  constructor(
    private readonly client: WebClient,
    private readonly log: HubLogger,
  ) {}

  /** The sender's and the chat's names, as far as Slack tells us quickly. */
  async names(userId: string, channelId: string): Promise<SlackNames> {
    const [user, title] = await Promise.all([
      this.#cached(this.#users, userId, () => this.#user(userId)),
      channelId.startsWith("D")
        ? Promise.resolve(undefined)
        : this.#cached(this.#channels, channelId, () => this.#channel(channelId)),
    ]);
    return { sender: user?.name, username: user?.username, chatTitle: title };
  }

  async #user(userId: string): Promise<{ name?: string; username?: string }> {
    const info = UserInfoSchema.parse(await this.client.users.info({ user: userId }));
    const name = info.user.profile?.display_name || info.user.real_name || info.user.profile?.real_name;
    return { ...(name ? { name } : {}), ...(info.user.name ? { username: info.user.name } : {}) };
  }

  async #channel(channelId: string): Promise<string | undefined> {
    const info = ConversationInfoSchema.parse(await this.client.conversations.info({ channel: channelId }));
    return info.channel.name ? `#${info.channel.name}` : undefined;
  }

  async #cached<T>(
    cache: Map<string, Entry<T>>,
    key: string,
    load: () => Promise<T>,
  ): Promise<T | undefined> {
    const hit = cache.get(key);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.value;
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), LOOKUP_BUDGET_MS);
    });
    const lookup = load().then(
      (value) => {
        if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
        cache.set(key, { value, at: Date.now() });
        return value;
      },
      (error: unknown) => {
        this.log.debug(
          { err: error instanceof Error ? error.message : String(error), key },
          "slack name lookup failed",
        );
        return undefined;
      },
    );
    try {
      return await Promise.race([lookup, budget]);
    } finally {
      clearTimeout(timer);
    }
  }
}
