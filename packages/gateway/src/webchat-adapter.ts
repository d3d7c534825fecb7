import {
  type AdapterFields,
  answeredRunOf,
  type ChannelAdapter,
  type ChannelCapabilities,
  type ChannelStatus,
  ChannelStatusCell,
  describeError,
  type InboundHandler,
  type InboundResult,
  type OutboundSegment,
  type ReplyTarget,
  type SendResult,
} from "@hub/core";
import type { ChatEventBus } from "./event-bus.js";

/** One message a gateway client sent with `chat.send`, as the web chat receives it. */
export interface WebChatMessage {
  /** The client's idempotency key: it becomes the message id and the run id. */
  runId: string;
  sessionKey: string;
  text: string;
  /** The authenticated client: the owner, or a configured client (`client:<name>`). */
  sender: { id: string; name: string };
  /** Whether the sender may run commands (every authenticated client of its own sessions). */
  commandAuthorized: boolean;
  /** Whether the flood limits pass the sender by (the owner only). */
  floodExempt: boolean;
}

/**
 * The web chat as a channel like the others. Its "platform" is the gateway:
 * inbound, `chat.send` hands each message to `receive`, which turns it into
 * adapter fields and answers the hub's `InboundResult`; outbound, a delivered
 * segment becomes a `chat` event with state `delta` on the event bus, so web
 * chat answers go through the same ordered delivery as every other channel.
 * The reply target's chatId is the sessionKey.
 */
export class WebChatAdapter implements ChannelAdapter {
  readonly channel = "webchat";
  readonly accountId = "default";
  readonly capabilities: ChannelCapabilities = {
    textLimit: 8000,
    markdown: "commonmark",
    threads: false,
    typing: false,
    edit: false,
  };
  #onInbound: InboundHandler | undefined;
  readonly #status = new ChannelStatusCell();

  constructor(private readonly bus: ChatEventBus) {}

  async start(onInbound: InboundHandler): Promise<void> {
    this.#onInbound = onInbound;
    this.#status.set("connected");
  }

  async stop(): Promise<void> {
    this.#onInbound = undefined;
    this.#status.set("stopped");
  }

  status(): ChannelStatus {
    return this.#status.get();
  }

  /** Admits one `chat.send` message; a failure on our side is `retry` (the client sends it again). */
  async receive(message: WebChatMessage): Promise<InboundResult> {
    const onInbound = this.#onInbound;
    if (!onInbound) return { kind: "retry", reason: "the web chat is not accepting messages right now" };
    const fields: AdapterFields = {
      channel: "webchat",
      accountId: this.accountId,
      messageId: message.runId,
      chat: { type: "direct", id: message.sessionKey },
      sender: { id: message.sender.id, name: message.sender.name, isBot: false },
      body: message.text,
      timestamp: Date.now(),
      sessionKey: message.sessionKey,
      commandAuthorized: message.commandAuthorized,
      floodExempt: message.floodExempt,
    };
    return onInbound(fields, { runId: message.runId }).catch(
      (error): InboundResult => ({ kind: "retry", reason: describeError(error) }),
    );
  }

  async send(segment: OutboundSegment, target: ReplyTarget): Promise<SendResult> {
    await this.bus.publish({
      // The run's id, as chat.send answered it: a resumed attempt's segments belong to the same answer.
      runId: answeredRunOf(segment),
      sessionKey: target.chatId,
      seq: segment.index,
      state: "delta",
      text: segment.text,
    });
    return {};
  }

  async sendTyping(): Promise<void> {}
}
