import { EventEmitter } from "node:events";
import { Readable } from "node:stream";
import { proto, type WAMessage, type WAPresence } from "@whiskeysockets/baileys";
import type { WhatsAppConnector, WhatsAppContent, WhatsAppSocket } from "../src/index.js";

/** What WhatsApp shows for sent content: text or caption, the media file, and the stored message. */
function sentView(content: WhatsAppContent): {
  text: string;
  file: SentMessage["file"];
  message: Record<string, unknown>;
} {
  if ("text" in content)
    return { text: content.text, file: undefined, message: { conversation: content.text } };
  const caption = content.caption ?? "";
  const media = { mimetype: content.mimetype, caption };
  if ("image" in content)
    return {
      text: caption,
      file: { filename: "image", data: content.image, image: true, mimetype: content.mimetype },
      message: { imageMessage: { ...media, fileLength: content.image.length } },
    };
  return {
    text: caption,
    file: { filename: content.fileName, data: content.document, image: false, mimetype: content.mimetype },
    message: {
      documentMessage: { ...media, fileLength: content.document.length, fileName: content.fileName },
    },
  };
}

/** The bot's own ids as a linked device sees them (`creds.me`). */
export const BOT = { pn: "15550001111@s.whatsapp.net", lid: "99887766@lid" };

/** A close error as baileys makes it (a Boom with `output.statusCode`). */
export function closeError(statusCode: number, message = "Connection Closed"): Error {
  return Object.assign(new Error(message), { output: { statusCode } });
}

/** An error stanza as baileys throws it from a query: a Boom (status 500) whose `data` is WhatsApp's code. */
export function stanzaError(code: number, text: string): Error {
  return Object.assign(new Error(text), { data: code, output: { statusCode: 500 } });
}

/** One message the bot sent, as WhatsApp received it. */
export interface SentMessage {
  jid: string;
  text: string;
  quoted?: WAMessage | undefined;
  id: string;
  /** A media message: the file's bytes, name and whether it was an image message. */
  file?: { filename: string; data: Buffer; image: boolean; mimetype: string } | undefined;
}

/**
 * A baileys socket without the network: an event emitter (`ev`) that tests
 * drive with `connection.update` and `messages.upsert` events carrying real
 * `proto.WebMessageInfo` objects, and that records what the adapter sends.
 */
export class FakeWhatsAppSocket implements WhatsAppSocket {
  readonly ev = new EventEmitter();
  readonly user = { id: "15550001111:7@s.whatsapp.net", lid: "99887766:7@lid", name: "Hub Bot" };
  readonly presence: Array<{ type: WAPresence; jid: string | undefined }> = [];
  ended = false;
  #failNext: Error | undefined;

  constructor(
    private readonly world: FakeWhatsApp,
    readonly index: number,
  ) {}

  async sendMessage(
    jid: string,
    content: WhatsAppContent | { react: { text: string; key: proto.IMessageKey } },
    options?: { quoted?: WAMessage; messageId?: string },
  ) {
    if (this.ended) throw closeError(428);
    // A scripted failure is for the next text message (the rate-limit cases count message sends).
    if ("react" in content) return this.world.react(jid, content.react);
    const failure = this.#failNext;
    this.#failNext = undefined;
    if (failure) throw failure;
    // As baileys: the given id, else one of its own.
    const id = options?.messageId ?? `BOT${String(this.world.sent.length).padStart(6, "0")}`;
    const { text, file, message } = sentView(content);
    // A message resent under an id the chat already has is the same message: shown once.
    const sent: SentMessage = { jid, text, quoted: options?.quoted, id, file };
    const resent = this.world.sent.some((m) => m.jid === jid && m.id === id);
    if (resent) this.world.resent.push(id);
    else this.world.sent.push(sent);
    this.world.onSend?.(sent, resent);
    return proto.WebMessageInfo.fromObject({
      key: { remoteJid: jid, fromMe: true, id },
      message,
      messageTimestamp: Math.floor(Date.now() / 1000),
    }) as WAMessage;
  }

  async sendPresenceUpdate(type: WAPresence, jid?: string): Promise<void> {
    this.presence.push({ type, jid });
  }

  end(error: Error | undefined): void {
    if (this.ended) return;
    this.ended = true;
    this.ev.emit("connection.update", { connection: "close", lastDisconnect: { error, date: new Date() } });
  }

  /** The next send fails with this error. */
  failNext(error: Error): void {
    this.#failNext = error;
  }

  open(): void {
    this.ev.emit("connection.update", { connection: "connecting" });
    this.ev.emit("connection.update", { connection: "open" });
  }

  /** WhatsApp closes the connection with this status code. */
  close(statusCode: number): void {
    this.ended = true;
    this.ev.emit("connection.update", {
      connection: "close",
      lastDisconnect: { error: closeError(statusCode), date: new Date() },
    });
  }

  /** Delivers messages the way baileys does (`notify` live, `append` for the offline backlog). */
  upsert(messages: unknown[], type: "notify" | "append" = "notify"): void {
    this.ev.emit("messages.upsert", { messages, type });
  }
}

/** The WhatsApp side of a linked device: the sockets the adapter opened and everything sent to any chat. */
export class FakeWhatsApp implements WhatsAppConnector {
  readonly sockets: FakeWhatsAppSocket[] = [];
  readonly sent: SentMessage[] = [];
  /** Ids of messages sent again under an id their chat already had (not shown a second time). */
  readonly resent: string[] = [];
  linked = true;
  forgotten = 0;
  /** Sockets open by themselves (set false to script each connection). */
  autoOpen = true;
  /** When set, opening a socket fails with it (WhatsApp unreachable). */
  openError: Error | undefined;
  /** Called at every send WhatsApp takes (`resent`: under an id its chat already had, so not shown again). */
  onSend: ((message: SentMessage, resent: boolean) => void) | undefined;

  async isLinked(): Promise<boolean> {
    return this.linked;
  }

  /** How long opening a socket takes (ms). */
  openDelayMs = 0;

  async open(): Promise<WhatsAppSocket> {
    if (this.openDelayMs) await new Promise((r) => setTimeout(r, this.openDelayMs));
    if (this.openError) throw this.openError;
    const socket = new FakeWhatsAppSocket(this, this.sockets.length);
    this.sockets.push(socket);
    if (this.autoOpen) setImmediate(() => socket.open());
    return socket;
  }

  /** Media bytes by message id (what WhatsApp's media server holds); others get `image bytes of <id>`. */
  readonly media = new Map<string, Buffer>();

  /** Media downloads served, by message id, in order. */
  readonly downloads: string[] = [];

  /** The media of a received message, as WhatsApp's media server would return it decrypted, streamed. */
  async download(message: WAMessage): Promise<AsyncIterable<Uint8Array>> {
    this.downloads.push(message.key.id ?? "");
    const stored = this.media.get(message.key.id ?? "");
    if (stored) return Readable.from([stored]);
    if (!message.message?.imageMessage) throw new Error("not a media message");
    return Readable.from([Buffer.from(`image bytes of ${message.key.id}`)]);
  }

  async forget(): Promise<void> {
    this.linked = false;
    this.forgotten++;
  }

  /** The socket opened last. */
  get socket(): FakeWhatsAppSocket {
    const socket = this.sockets.at(-1);
    if (!socket) throw new Error("no socket opened yet");
    return socket;
  }

  /** The bot's reaction on each message (`<chat>/<message id>`), as WhatsApp shows it. */
  readonly reactions = new Map<string, string>();

  /** A reaction message: `text` sets the bot's one reaction on the message `key`, "" removes it. */
  react(jid: string, reaction: { text: string; key: proto.IMessageKey }): WAMessage {
    const ref = `${reaction.key.remoteJid ?? jid}/${reaction.key.id ?? ""}`;
    if (reaction.text === "") this.reactions.delete(ref);
    else this.reactions.set(ref, reaction.text);
    return proto.WebMessageInfo.fromObject({
      key: { remoteJid: jid, fromMe: true, id: `REACT${this.reactions.size}` },
      message: { reactionMessage: reaction },
      messageTimestamp: Math.floor(Date.now() / 1000),
    }) as WAMessage;
  }

  sentTo(jid: string): SentMessage[] {
    return this.sent.filter((m) => m.jid === jid);
  }
}

let counter = 0;
const nextId = () => `3EB0${(++counter).toString(16).toUpperCase().padStart(12, "0")}`;
const now = () => Math.floor(Date.now() / 1000);

/** Options of a built message. */
export interface MessageOptions {
  id?: string;
  timestamp?: number;
  pushName?: string;
  fromMe?: boolean;
  /** Wrap in an ephemeral (disappearing) message. */
  ephemeral?: boolean;
}

/** A direct text message from `from` (a phone JID or a LID). */
export function directText(from: string, text: string, o: MessageOptions = {}): proto.WebMessageInfo {
  const content = { extendedTextMessage: { text } };
  return proto.WebMessageInfo.fromObject({
    key: { remoteJid: from, fromMe: o.fromMe ?? false, id: o.id ?? nextId() },
    message: o.ephemeral ? { ephemeralMessage: { message: content } } : content,
    messageTimestamp: o.timestamp ?? now(),
    pushName: o.pushName ?? "Alice",
  });
}

/** Options of a group message: mentions, a quoted message, the participant's alternative (phone) JID. */
export interface GroupOptions extends MessageOptions {
  mentions?: string[];
  quoted?: { id: string; participant: string; text: string };
  participantAlt?: string;
}

/** A group text message by `participant` in `group`. */
export function groupText(
  group: string,
  participant: string,
  text: string,
  o: GroupOptions = {},
): proto.WebMessageInfo {
  const contextInfo = {
    ...(o.mentions ? { mentionedJid: o.mentions } : {}),
    ...(o.quoted
      ? {
          stanzaId: o.quoted.id,
          participant: o.quoted.participant,
          quotedMessage: { conversation: o.quoted.text },
        }
      : {}),
  };
  const msg = proto.WebMessageInfo.fromObject({
    key: { remoteJid: group, fromMe: o.fromMe ?? false, id: o.id ?? nextId(), participant },
    message: { extendedTextMessage: { text, contextInfo } },
    messageTimestamp: o.timestamp ?? now(),
    pushName: o.pushName ?? "Bob",
  });
  // baileys adds the alternative address after decoding (it is not a protobuf field of MessageKey).
  if (o.participantAlt && msg.key) Object.assign(msg.key, { participantAlt: o.participantAlt });
  return msg;
}

/** An image with a caption, in a direct chat. */
export function imageWithCaption(
  from: string,
  caption: string,
  o: MessageOptions = {},
): proto.WebMessageInfo {
  return proto.WebMessageInfo.fromObject({
    key: { remoteJid: from, fromMe: false, id: o.id ?? nextId() },
    message: {
      imageMessage: {
        caption,
        mimetype: "image/jpeg",
        fileLength: 52_431,
        url: "https://mmg.whatsapp.net/v/t62.7118-24/fake.enc",
        mediaKey: Buffer.from("0123456789abcdef0123456789abcdef"),
      },
    },
    messageTimestamp: o.timestamp ?? now(),
    pushName: "Alice",
  });
}

/** A media message (image, document or voice note) with a caption, in a direct chat, as WhatsApp encodes it. */
export function directMedia(
  from: string,
  file: { kind: "image" | "document" | "voice"; name: string; mime: string; size: number },
  caption: string,
  o: MessageOptions = {},
): proto.WebMessageInfo {
  const common = {
    mimetype: file.mime,
    fileLength: file.size,
    url: "https://mmg.whatsapp.net/v/t62.7118-24/fake.enc",
    directPath: "/v/t62.7118-24/fake.enc",
    mediaKey: Buffer.from("0123456789abcdef0123456789abcdef"),
  };
  const message =
    file.kind === "image"
      ? { imageMessage: { ...common, caption } }
      : file.kind === "voice"
        ? { audioMessage: { ...common, ptt: true, seconds: 2 } }
        : { documentMessage: { ...common, fileName: file.name, caption } };
  return proto.WebMessageInfo.fromObject({
    key: { remoteJid: from, fromMe: false, id: o.id ?? nextId() },
    message,
    messageTimestamp: o.timestamp ?? now(),
    pushName: "Alice",
  });
}

/** A status update (posted to `status@broadcast`). */
export function statusUpdate(participant: string, text: string): proto.WebMessageInfo {
  return proto.WebMessageInfo.fromObject({
    key: { remoteJid: "status@broadcast", fromMe: false, id: nextId(), participant },
    message: { extendedTextMessage: { text } },
    messageTimestamp: now(),
  });
}
