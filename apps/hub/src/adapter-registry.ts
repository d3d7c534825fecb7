import type { ChannelAdapter } from "@hub/core";
import { isUnbuilt } from "./unbuilt-adapter.js";

/** The adapters of one hub process, found by channel and account. */
export class AdapterRegistry {
  readonly #byAccount = new Map<string, ChannelAdapter>();
  readonly #byChannel = new Map<string, ChannelAdapter>();

  constructor(adapters: Iterable<ChannelAdapter> = []) {
    for (const adapter of adapters) this.add(adapter);
  }

  add(adapter: ChannelAdapter): void {
    const key = `${adapter.channel}\u0000${adapter.accountId ?? "default"}`;
    if (this.#byAccount.has(key))
      throw new Error(`two adapters for ${adapter.channel} account ${adapter.accountId ?? "default"}`);
    this.#byAccount.set(key, adapter);
    // The channel's capabilities come from a built adapter: a stand-in's (no token) are placeholders.
    const known = this.#byChannel.get(adapter.channel);
    if (!known || (isUnbuilt(known) && !isUnbuilt(adapter))) this.#byChannel.set(adapter.channel, adapter);
  }

  /** The adapter that sends for this account (a reply goes out through the bot it came in on). */
  forAccount(channel: string, accountId: string): ChannelAdapter | undefined {
    return this.#byAccount.get(`${channel}\u0000${accountId}`);
  }

  /** Some adapter of this channel (capabilities are the channel's, the same for every account). */
  forChannel(channel: string): ChannelAdapter | undefined {
    return this.#byChannel.get(channel);
  }

  all(): ChannelAdapter[] {
    return [...this.#byAccount.values()];
  }
}
