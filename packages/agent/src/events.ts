import type { ChatEvent } from "@hub/core";

/** Publishes chat events to clients (the gateway's event bus). */
export interface ChatEventPublisher {
  publish(event: ChatEvent): Promise<void>;
}
