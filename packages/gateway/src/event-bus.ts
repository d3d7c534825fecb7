import { type ChatEvent, ChatEventSchema, type HubLogger } from "@hub/core";
import type { Redis } from "ioredis";

/**
 * Chat events over Redis pub/sub, so a run or a delivery in any process
 * reaches the clients connected to any gateway process.
 */
export class ChatEventBus {
  readonly #channel: string;
  #subscriber: Redis | undefined;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly logger: HubLogger,
  ) {
    this.#channel = `${prefix}:chat-events`;
  }

  /** Publishes one event to every gateway. */
  async publish(event: ChatEvent): Promise<void> {
    await this.redis.publish(this.#channel, JSON.stringify(event));
  }

  /**
   * Delivers every valid event to `handler` while `wanted()` (without it, always); an event nobody
   * wants is not parsed. `subscriber` must be a dedicated connection.
   */
  async subscribe(
    subscriber: Redis,
    handler: (event: ChatEvent) => void,
    wanted: () => boolean = () => true,
  ): Promise<void> {
    this.#subscriber = subscriber;
    subscriber.on("message", (_channel: string, message: string) => {
      if (!wanted()) return;
      try {
        handler(ChatEventSchema.parse(JSON.parse(message)));
      } catch (error) {
        this.logger.warn({ err: error }, "ignoring malformed chat event");
      }
    });
    await subscriber.subscribe(this.#channel);
  }

  close(): void {
    this.#subscriber?.disconnect();
  }
}
