// The sends of the delivery benches. Ordered delivery and each of its baselines make the same send to a
// fake of their own, so a ratio says what the queue adds to that send. Two sends, because that depends on
// what a send costs: the hub's Telegram adapter to a fake Bot API (grammY over undici, the text rendered
// to Telegram's HTML: what the hub sends), and the fake chat adapter's bare node:http POST to the fake
// chat platform (the cheapest send there is: what is left is almost only the queue's own cost).
import { type ChannelAdapter, createLogger, type ReplyTarget } from "@hub/core";
import { startFakeTelegram } from "@hub/fakes";
import { TelegramAdapter } from "@hub/telegram";
import { FakeChatAdapter, startFakeChatPlatform } from "../fakes/src/index.js";

/** One send's adapter on a fake of its own, and what the fake was sent. */
export interface SendKit {
  adapter: ChannelAdapter;
  /** The reply target of bench target `t`. */
  target(t: number): ReplyTarget;
  /** The texts the fake accepted, by chat, in the order it accepted them. */
  received(): Map<string, string[]>;
  close(): Promise<void>;
}

/** A kind of send, named for the bench's lines. */
export interface SendKind {
  name: string;
  open(): Promise<SendKit>;
}

/** The hub's Telegram adapter (pacing off, as in the hub benches) sending to a fake Bot API. */
export const telegramSend: SendKind = {
  name: "the Telegram adapter to a fake Bot API",
  open: async () => {
    const fake = await startFakeTelegram();
    const values = new Map<string, string>();
    const adapter = new TelegramAdapter({
      botToken: fake.token,
      apiRoot: fake.apiRoot,
      state: { get: async (k) => values.get(k), set: async (k, v) => void values.set(k, v) },
      logger: createLogger({ level: "silent" }),
      pacing: { chatIntervalMs: 0, groupIntervalMs: 0, maxSendsPerSecond: 0 },
    });
    return {
      adapter,
      target: (t) => ({ channel: "telegram", accountId: "default", chatId: String(1000 + t) }),
      received: () => byChat(fake.sent().map((p) => [String(p.chat_id), String(p.text)])),
      close: async () => {
        await adapter.stop();
        await fake.close();
      },
    };
  },
};

/** The fake chat adapter (a bare node:http POST) sending to the fake chat platform. */
export const bareHttpSend: SendKind = {
  name: "a bare node:http POST to a fake chat platform",
  open: async () => {
    const platform = await startFakeChatPlatform();
    return {
      adapter: new FakeChatAdapter("fakechat", platform.url, { textLimit: 1000 }),
      target: (t) => ({ channel: "fakechat", accountId: "default", chatId: `chat-${t}` }),
      received: () => byChat(platform.messages.map((m) => [m.chatId, m.text])),
      close: () => platform.close(),
    };
  },
};

function byChat(entries: Array<[string, string]>): Map<string, string[]> {
  const chats = new Map<string, string[]>();
  for (const [chat, text] of entries) {
    const texts = chats.get(chat);
    if (texts) texts.push(text);
    else chats.set(chat, [text]);
  }
  return chats;
}

/** The text of target `t`'s segment `s`, as every side of the delivery benches sends it. */
export const segmentText = (t: number, s: number) => `target ${t} segment ${s}`;

/**
 * Segments a chat received out of order or not as sent: each chat's texts should be its target's segments
 * 0, 1, 2, ... in turn, exactly as `segmentText` wrote them.
 */
export function outOfOrder(received: Map<string, string[]>): number {
  let wrong = 0;
  for (const texts of received.values()) {
    const target = Number(/^target (\d+) /.exec(texts[0] ?? "")?.[1]);
    wrong += texts.filter((text, i) => text !== segmentText(target, i)).length;
  }
  return wrong;
}
