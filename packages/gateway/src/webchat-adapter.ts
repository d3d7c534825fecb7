import type {
  ChannelAdapter,
  ChannelCapabilities,
  OutboundSegment,
  ReplyTarget,
  SendResult,
} from "@hub/core";
import type { ChatEventBus } from "./event-bus.js";

/**
 * The web chat as a channel: its "platform" is the gateway's event bus. A
 * delivered segment becomes a `chat` event with state `delta`, so web chat
 * answers go through the same ordered delivery as every other channel.
 * The reply target's chatId is the sessionKey.
 */
export class WebChatAdapter implements ChannelAdapter {
  readonly channel = "webchat";
  readonly capabilities: ChannelCapabilities = {
    textLimit: 8000,
    markdown: "commonmark",
    threads: false,
    typing: false,
    edit: false,
  };

  constructor(private readonly bus: ChatEventBus) {}

  // Inbound web chat messages arrive through the gateway's chat.send, not through start().
  async start(): Promise<void> {}
  async stop(): Promise<void> {}

  async send(segment: OutboundSegment, target: ReplyTarget): Promise<SendResult> {
    await this.bus.publish({
      runId: segment.replyId,
      sessionKey: target.chatId,
      seq: segment.index,
      state: "delta",
      text: segment.text,
    });
    return {};
  }

  async sendTyping(): Promise<void> {}
}
