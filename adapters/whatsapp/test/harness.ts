import type { ConformanceHarness, HarnessStartOptions, OutboundMessage } from "@hub/conformance";
import { createLogger } from "@hub/core";
import type { proto } from "@whiskeysockets/baileys";
import { waitFor } from "../../../test/support/redis.js";
import { WhatsAppAdapter, type WhatsAppAdapterOptions } from "../src/index.js";
import {
  BOT,
  directMedia,
  directText,
  FakeWhatsApp,
  groupText,
  type SentMessage,
  stanzaError,
} from "./fake-whatsapp.js";

const USER = "4915112345678@s.whatsapp.net";
const STRANGER = "4930555000111@s.whatsapp.net";
const GROUP = "120363041234567890@g.us";

/** Whether WhatsApp would show the text as intended: every ``` block closed within the message. */
function wellFormed(text: string): boolean {
  return (text.match(/```/g) ?? []).length % 2 === 0;
}

function outboundOf(message: SentMessage): OutboundMessage {
  return {
    text: message.text,
    replyToMessageId: message.quoted?.key?.id ?? undefined,
    wellFormed: wellFormed(message.text),
    file: message.file,
  };
}

/** A plain-JSON copy of a message (what the fuzz mutates): Longs and Buffers as JSON shows them. */
const plain = (message: proto.WebMessageInfo): unknown => JSON.parse(JSON.stringify(message.toJSON()));

/**
 * The WhatsApp harness of the shared conformance suite: the adapter on a fake
 * linked device whose socket the harness drives with real `proto.WebMessageInfo`
 * objects. A redelivery is what WhatsApp does on a reconnect: the connection
 * closes (428), a new socket opens and replays the message as offline backlog.
 */
export function whatsappHarness(
  options: Partial<WhatsAppAdapterOptions> = {},
): ConformanceHarness & { fake: () => FakeWhatsApp } {
  const wa = new FakeWhatsApp();
  let adapter: WhatsAppAdapter | undefined;
  const openSocket = async () => {
    await waitFor(() => adapter?.status().state === "connected", "the connection");
    return wa.socket;
  };
  const deliver = async (messages: unknown[], type: "notify" | "append" = "notify") => {
    (await openSocket()).upsert(messages, type);
  };
  const lastBotMessage = () => wa.sentTo(GROUP).at(-1)?.id ?? "BOT-NONE";
  return {
    channel: "whatsapp",
    textLimit: 4000,
    supportsThreads: false,
    ids: { user: USER, group: GROUP, directChat: USER },
    fake: () => wa,
    async start(startOptions: HarnessStartOptions = {}) {
      // Silent: sockets open at the transport and never get to "open" (WhatsApp never answers).
      if (startOptions.silent) wa.autoOpen = false;
      if (startOptions.unreachable) wa.openError = new Error("connect ECONNREFUSED web.whatsapp.com:443");
      adapter = new WhatsAppAdapter({
        connector: wa,
        logger: startOptions.logger ?? createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" }),
        reconnect: { initialMs: 200, maxMs: 1000 },
        // The suite's paced answers would take minutes at WhatsApp's real pace.
        sendIntervalMs: 0,
        groupSendIntervalMs: 0,
        ...options,
      });
      return adapter;
    },
    async platformUp() {
      wa.openError = undefined;
    },
    async stop() {},
    async direct(text) {
      const message = directText(USER, text);
      await deliver([message]);
      return message;
    },
    async directWithFile(text, file) {
      // WhatsApp: a media message; the linked device downloads and decrypts it from the media server.
      const message = directMedia(USER, { ...file, size: file.bytes.length }, text);
      wa.media.set(message.key?.id ?? "", file.bytes);
      await deliver([message]);
      return message;
    },
    downloads: () => wa.downloads.length,
    async group(text, groupOptions = {}) {
      const message = groupText(GROUP, USER, groupOptions.mention ? `@15550001111 ${text}` : text, {
        ...(groupOptions.mention ? { mentions: [BOT.pn] } : {}),
        ...(groupOptions.replyToBot
          ? {
              quoted: {
                id: lastBotMessage(),
                participant: "15550001111:7@s.whatsapp.net",
                text: "an answer",
              },
            }
          : {}),
      });
      await deliver([message]);
      return message;
    },
    async commandForAnotherBot() {
      await deliver([groupText(GROUP, USER, "/status@some_other_bot")]);
    },
    async redeliver(ref) {
      // A reconnect: the connection drops, a new socket opens and replays the message as offline backlog.
      const before = wa.sockets.length;
      (await openSocket()).close(428);
      await waitFor(() => wa.sockets.length > before, "a new socket");
      await deliver([ref], "append");
    },
    async malformed() {
      await deliver([{ key: { remoteJid: 42 }, message: "not a message" }, { nothing: true }]);
    },
    rateLimitNextSend() {
      wa.socket.failNext(stanzaError(429, "rate-overlimit"));
    },
    outbound: (chatId) => wa.sentTo(chatId).map(outboundOf),
    reactionsOn: (ref) => {
      const { key } = ref as proto.IWebMessageInfo;
      const emoji = wa.reactions.get(`${key?.remoteJid ?? ""}/${key?.id ?? ""}`);
      return emoji ? [emoji] : [];
    },
    raw: {
      valid: (text) => plain(directText(STRANGER, text)),
      allowed: (text) => plain(directText(USER, text)),
      poison: () => [
        { key: "a string, not a key", message: { conversation: "x" } },
        { key: { id: "NOCHAT", fromMe: false }, message: { conversation: "no remoteJid" } },
        { key: { remoteJid: GROUP, id: "NOPART" }, message: { conversation: "group without participant" } },
        { key: { remoteJid: USER, id: "BADMSG" }, message: "a string, not a message" },
      ],
      deliver: async (payload) => {
        await deliver([payload]);
        return {};
      },
      deliverBatch: (payloads) => deliver(payloads),
    },
  };
}
