import { type AdapterFields, cleanMediaName, type Media } from "@hub/core";
import {
  isJidBroadcast,
  isJidGroup,
  isJidNewsletter,
  isJidStatusBroadcast,
  isLidUser,
  isPnUser,
  jidNormalizedUser,
  normalizeMessageContent,
  type proto,
} from "@whiskeysockets/baileys";
import { z } from "zod";

/** The linked account's own ids (phone JID and LID, device part dropped): how mentions of the bot are found. */
export interface SelfIdentity {
  ids: ReadonlySet<string>;
}

/** The bot's own ids from `sock.user` (`creds.me`): `id` is a device JID (`123:45@s.whatsapp.net`), `lid` a LID. */
export function selfIdentity(user: { id?: string | null; lid?: string | null } | undefined): SelfIdentity {
  const ids = new Set<string>();
  for (const jid of [user?.id, user?.lid]) {
    const normalized = typeof jid === "string" && jid !== "" ? safeNormalize(jid) : undefined;
    if (normalized) ids.add(normalized);
  }
  return { ids };
}

function safeNormalize(jid: string): string | undefined {
  try {
    const normalized = jidNormalizedUser(jid);
    return normalized === "" ? undefined : normalized;
  } catch {
    return undefined;
  }
}

// A protobuf uint64 (`messageTimestamp`) arrives as a number, a Long, a numeric string, or (cloned) {low, high}.
const LongSchema = z.union([
  z.number().nonnegative(),
  z.string().regex(/^\d{1,15}$/),
  z.looseObject({ low: z.number().int(), high: z.number().int().min(0).max(0x1fffff) }),
]);

function longValue(value: z.infer<typeof LongSchema>): number {
  if (typeof value === "number") return value;
  if (typeof value === "string") return Number(value);
  return value.high * 2 ** 32 + (value.low >>> 0);
}

const Jid = z.string().min(3).max(256);

const KeySchema = z.looseObject({
  remoteJid: Jid,
  fromMe: z.boolean().nullish(),
  id: z.string().min(1).max(128),
  participant: Jid.nullish(),
  participantAlt: Jid.nullish(),
  remoteJidAlt: Jid.nullish(),
});

/** The fields of a `proto.WebMessageInfo` the adapter reads, checked before anything touches them. */
const WebMessageSchema = z.looseObject({
  key: KeySchema,
  message: z.looseObject({}).nullish(),
  messageTimestamp: LongSchema.nullish(),
  pushName: z.string().max(512).nullish(),
});

/** The `key` of a message the adapter accepted (for quoting it later). */
export type WhatsAppKey = z.infer<typeof KeySchema>;

const ContextInfoSchema = z.looseObject({
  mentionedJid: z.array(z.string().max(256)).max(1024).nullish(),
  stanzaId: z.string().min(1).max(128).nullish(),
  participant: Jid.nullish(),
  quotedMessage: z.looseObject({}).nullish(),
});

const TextPartSchema = z.looseObject({
  text: z.string().nullish(),
  contextInfo: ContextInfoSchema.nullish(),
});

const MediaPartSchema = z.looseObject({
  caption: z.string().nullish(),
  mimetype: z.string().min(1).max(256).nullish(),
  fileLength: LongSchema.nullish(),
  fileName: z.string().nullish(),
  contextInfo: ContextInfoSchema.nullish(),
});

const MEDIA_KINDS = {
  imageMessage: { kind: "image", mime: "image/jpeg" },
  videoMessage: { kind: "video", mime: "video/mp4" },
  // A round video note: a video baileys downloads like any other ("ptv" in its media keys).
  ptvMessage: { kind: "video", mime: "video/mp4" },
  documentMessage: { kind: "document", mime: "application/octet-stream" },
  audioMessage: { kind: "audio", mime: "audio/ogg" },
  stickerMessage: { kind: "sticker", mime: "image/webp" },
} as const satisfies Record<string, { kind: Media["kind"]; mime: string }>;

/** Content kinds that are never answered: protocol (revokes, edits' envelopes, key shares), reactions, poll votes. */
const IGNORED_KINDS = [
  "protocolMessage",
  "reactionMessage",
  "encReactionMessage",
  "pollUpdateMessage",
  "pollCreationMessage",
  "pollCreationMessageV2",
  "pollCreationMessageV3",
] as const;

/** What became of one raw message: adapter fields, or why nothing is done with it. */
export type NormalizedMessage =
  | { ok: true; fields: AdapterFields; key: WhatsAppKey; message: proto.IMessage }
  | { ok: false; reason: string; ignored: boolean; messageId?: string | undefined };

/** Options of `normalizeWhatsAppMessage`. */
export interface NormalizeOptions {
  accountId: string;
}

const ignored = (reason: string, messageId?: string): NormalizedMessage => ({
  ok: false,
  reason,
  ignored: true,
  messageId,
});

/** The reply target's message id for a group message: the key id and, after `|`, its author (quoting needs both). */
export function encodeQuoteRef(id: string, participant: string | undefined): string {
  return participant ? `${id}|${participant}` : id;
}

/** The key id and author of a quote reference made by `encodeQuoteRef`. */
export function decodeQuoteRef(ref: string): { id: string; participant?: string } {
  const cut = ref.indexOf("|");
  return cut < 0 ? { id: ref } : { id: ref.slice(0, cut), participant: ref.slice(cut + 1) };
}

function chatKind(jid: string): "direct" | "group" | string {
  if (isJidStatusBroadcast(jid)) return "status broadcast";
  if (isJidNewsletter(jid)) return "newsletter";
  if (isJidBroadcast(jid)) return "broadcast list";
  if (isJidGroup(jid)) return "group";
  if (isPnUser(jid) || isLidUser(jid)) return "direct";
  return `unsupported chat (${jid.slice(jid.indexOf("@"))})`;
}

/** A sender's id: the phone JID when known (allowlists are written with phone numbers), else the LID. */
function senderId(primary: string, alt: string | null | undefined): string | undefined {
  const main = safeNormalize(primary);
  const other = alt ? safeNormalize(alt) : undefined;
  if (main && isPnUser(main)) return main;
  if (other && isPnUser(other)) return other;
  return main ?? other;
}

/** Text of a message's content: `conversation`, `extendedTextMessage.text`, or a media caption. */
function textOf(content: proto.IMessage): {
  text: string;
  context: z.infer<typeof ContextInfoSchema> | null;
} {
  if (typeof content.conversation === "string") return { text: content.conversation, context: null };
  const extended = TextPartSchema.safeParse(content.extendedTextMessage);
  if (content.extendedTextMessage && extended.success)
    return { text: extended.data.text ?? "", context: extended.data.contextInfo ?? null };
  for (const part of Object.keys(MEDIA_KINDS) as Array<keyof typeof MEDIA_KINDS>) {
    if (!content[part]) continue;
    const media = MediaPartSchema.safeParse(content[part]);
    if (media.success) return { text: media.data.caption ?? "", context: media.data.contextInfo ?? null };
  }
  return sharedOf(content);
}

/** Message parts that carry no `text` but say something: a location, contact cards, a tapped choice. */
const SHARED_PARTS = [
  "locationMessage",
  "liveLocationMessage",
  "contactMessage",
  "contactsArrayMessage",
  "buttonsResponseMessage",
  "templateButtonReplyMessage",
  "listResponseMessage",
] as const;

const LocationSchema = z.looseObject({
  degreesLatitude: z.number().nullish(),
  degreesLongitude: z.number().nullish(),
  name: z.string().max(1024).nullish(),
  address: z.string().max(1024).nullish(),
  /** A live location's words. */
  caption: z.string().max(4096).nullish(),
});
const ContactSchema = z.looseObject({
  displayName: z.string().max(1024).nullish(),
  vcard: z.string().nullish(),
});
const ChoiceSchema = z.looseObject({
  selectedDisplayText: z.string().nullish(),
  title: z.string().nullish(),
});

/**
 * What a shared location, a contact card or a tapped button says, as text the agent can read
 * (`[location: …]`, `[contact: …]`, the choice), with its context (mentions, the message quoted).
 */
function sharedOf(content: proto.IMessage): {
  text: string;
  context: z.infer<typeof ContextInfoSchema> | null;
} {
  const kind = SHARED_PARTS.find((k) => content[k] != null);
  if (!kind) return { text: "", context: null };
  const part = content[kind] as { contextInfo?: unknown };
  const context = ContextInfoSchema.safeParse(part.contextInfo);
  return { text: sharedTextOf(kind, part), context: context.success ? context.data : null };
}

function sharedTextOf(kind: (typeof SHARED_PARTS)[number], part: unknown): string {
  if (kind === "locationMessage" || kind === "liveLocationMessage") {
    const location = LocationSchema.safeParse(part);
    if (!location.success) return "";
    const { degreesLatitude: lat, degreesLongitude: lon, name, address, caption } = location.data;
    const place = [name, address].filter(Boolean).join(", ");
    const at = typeof lat === "number" && typeof lon === "number" ? `${lat}, ${lon}` : "";
    const where = [place, at && `(${at})`].filter(Boolean).join(" ");
    const shared = where ? `[location: ${where}]` : "[location]";
    return caption ? `${shared}\n${caption}` : shared;
  }
  if (kind === "contactMessage" || kind === "contactsArrayMessage") {
    const cards =
      kind === "contactMessage" ? [part] : ((part as proto.Message.IContactsArrayMessage).contacts ?? []);
    return cards
      .flatMap((c) => {
        const card = ContactSchema.safeParse(c);
        return card.success ? [`[contact: ${contactLine(card.data)}]`] : [];
      })
      .join("\n");
  }
  const choice = ChoiceSchema.safeParse(part);
  return choice.success ? (choice.data.selectedDisplayText ?? choice.data.title ?? "") : "";
}

/** A contact card as one line: its name and the phone numbers of its vCard. */
function contactLine(card: z.infer<typeof ContactSchema>): string {
  const phones = [...(card.vcard ?? "").matchAll(/^TEL[^:\n]*:([^\n\r]+)/gim)].map((m) => m[1]!.trim());
  return [card.displayName ?? "someone", ...phones].join(", ");
}

function mediaOf(content: proto.IMessage, ref: string): Media[] {
  const out: Media[] = [];
  for (const [part, { kind, mime }] of Object.entries(MEDIA_KINDS)) {
    const raw = content[part as keyof typeof MEDIA_KINDS];
    if (!raw) continue;
    const media = MediaPartSchema.safeParse(raw);
    if (!media.success) continue;
    const size = media.data.fileLength ? longValue(media.data.fileLength) : undefined;
    const voice = part === "audioMessage" && (raw as { ptt?: unknown }).ptt === true;
    const name = cleanMediaName(media.data.fileName);
    out.push({
      ...(name ? { name } : {}),
      kind: voice ? "voice" : kind,
      mime: media.data.mimetype ?? mime,
      ...(size !== undefined && Number.isSafeInteger(size) ? { size } : {}),
      ref,
    });
  }
  return out;
}

function unwrap(message: Record<string, unknown>): proto.IMessage | undefined {
  try {
    return normalizeMessageContent(message as proto.IMessage) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Turns one message of `messages.upsert` into adapter fields. Ignored (never
 * answered): own messages (`fromMe`), status broadcasts, newsletters and
 * broadcast lists, stubs without content (undecryptable, retried by baileys),
 * protocol messages, reactions and polls. Ephemeral and view-once wrappers are
 * unwrapped with baileys' `normalizeMessageContent`. A group message mentions
 * the bot when `contextInfo.mentionedJid` holds its phone JID or LID, or when
 * it quotes the bot. Every field read is validated first; a message that does
 * not have the shape of a `WebMessageInfo` is rejected. Pure.
 */
export function normalizeWhatsAppMessage(
  raw: unknown,
  self: SelfIdentity,
  options: NormalizeOptions,
): NormalizedMessage {
  const parsed = WebMessageSchema.safeParse(raw);
  if (!parsed.success)
    return { ok: false, reason: "not a WebMessageInfo (key missing or malformed)", ignored: false };
  const { key, message, messageTimestamp, pushName } = parsed.data;
  if (key.fromMe) return ignored("sent by this account", key.id);
  const kind = chatKind(key.remoteJid);
  if (kind !== "direct" && kind !== "group") return ignored(kind, key.id);
  if (!message) return ignored("no content (a stub, or not decrypted yet)", key.id);
  const content = unwrap(message);
  if (!content) return ignored("no content after unwrapping", key.id);
  const skipped = IGNORED_KINDS.find((k) => content[k] != null);
  if (skipped) return ignored(skipped, key.id);
  const isGroup = kind === "group";
  const author = isGroup ? key.participant : key.remoteJid;
  if (!author) return { ok: false, reason: "a group message without a participant", ignored: false };
  const sender = senderId(author, isGroup ? key.participantAlt : key.remoteJidAlt);
  if (!sender) return { ok: false, reason: "unreadable sender JID", ignored: false, messageId: key.id };
  const { text, context } = textOf(content);
  const media = mediaOf(content, `${key.remoteJid}/${key.id}`);
  if (text.trim() === "" && media.length === 0) return ignored("no text or media", key.id);
  const mentions = (context?.mentionedJid ?? []).map(safeNormalize);
  const quotedAuthor = context?.participant ? safeNormalize(context.participant) : undefined;
  const quotesBot = quotedAuthor !== undefined && self.ids.has(quotedAuthor);
  const mentioned = mentions.some((jid) => jid !== undefined && self.ids.has(jid)) || quotesBot;
  const quoted = context?.stanzaId
    ? {
        messageId: context.stanzaId,
        ...(quotedAuthor ? { senderId: quotedAuthor } : {}),
        ...quotedBody(context.quotedMessage),
      }
    : undefined;
  const seconds = messageTimestamp ? longValue(messageTimestamp) : 0;
  const fields: AdapterFields = {
    channel: "whatsapp",
    accountId: options.accountId,
    messageId: key.id,
    chat: { type: isGroup ? "group" : "direct", id: key.remoteJid },
    sender: { id: sender, ...(pushName ? { name: pushName } : {}), isBot: false },
    body: text,
    wasMentioned: isGroup ? mentioned : true,
    ...(quoted ? { replyTo: quoted } : {}),
    media,
    timestamp: Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : 0,
    ...(isGroup ? { replyToMessageId: encodeQuoteRef(key.id, key.participant ?? undefined) } : {}),
  };
  return { ok: true, fields, key, message: content };
}

function quotedBody(quoted: Record<string, unknown> | null | undefined): { body?: string } {
  if (!quoted) return {};
  const content = unwrap(quoted);
  const text = content ? textOf(content).text : "";
  return text ? { body: text.slice(0, 4000) } : {};
}
