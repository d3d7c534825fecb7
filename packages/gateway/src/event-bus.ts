import { type ChatEvent, ChatEventSchema, type HubLogger } from "@hub/core";
import type { Redis } from "ioredis";
import { ChatListeners, type ChatListenersTiming } from "./chat-listeners.js";

/**
 * Chat events over Redis pub/sub, so a run or a delivery in any process
 * reaches the clients connected to any gateway process; published only while
 * a client may hear them (see `ChatListeners`).
 */
export class ChatEventBus {
  readonly #channel: string;
  readonly #listeners: ChatListeners;
  #subscriber: Redis | undefined;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly logger: HubLogger,
    timing?: ChatListenersTiming,
  ) {
    this.#channel = `${prefix}:chat-events`;
    this.#listeners = new ChatListeners(redis, prefix, timing);
  }

  /** Who may hear the events: this process's gateway counts its clients into it (`clientsHere`). */
  get listeners(): ChatListeners {
    return this.#listeners;
  }

  /**
   * Hears which gateways have clients on `subscriber` (a dedicated connection, which `subscribe` may share):
   * from then on, events nobody can hear are not published.
   */
  listen(subscriber: Redis): Promise<void> {
    return this.#listeners.listen(subscriber);
  }

  /** Publishes one event to every gateway, when a client of any may hear it. */
  async publish(event: ChatEvent): Promise<void> {
    if (!this.#listeners.any) return;
    await this.redis.publish(this.#channel, JSON.stringify(event));
  }

  /**
   * Delivers every valid event to `handler` while `wanted()` (without it, always); an event nobody
   * wants is not parsed. `subscriber` must be a dedicated connection (it may carry other channels).
   */
  async subscribe(
    subscriber: Redis,
    handler: (event: ChatEvent) => void,
    wanted: () => boolean = () => true,
  ): Promise<void> {
    this.#subscriber = subscriber;
    subscriber.on("message", (channel: string, message: string) => {
      if (channel !== this.#channel || !wanted()) return;
      try {
        handler(ChatEventSchema.parse(JSON.parse(message)));
      } catch (error) {
        this.logger.warn({ err: error }, "ignoring malformed chat event");
      }
    });
    await subscriber.subscribe(this.#channel);
  }

  close(): void {
    this.#listeners.close();
    this.#subscriber?.disconnect();
  }
}
