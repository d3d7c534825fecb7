import {
  chatRefusesStatus,
  describeError,
  type HubLogger,
  type OutboundSegment,
  PermanentSendError,
  RateLimitedError,
  type ReplyTarget,
  type SendResult,
  segmentIdentityDigest,
} from "@hub/core";
import type { WAMessage } from "@whiskeysockets/baileys";
import { closeCode } from "./connection.js";
import { decodeQuoteRef } from "./normalize.js";
import { renderWhatsApp } from "./render.js";
import { mediaContent } from "./send-file.js";
import type { WhatsAppSocket } from "./socket.js";

/** What the sending side needs from its adapter. */
export interface OutboundDeps {
  /** The open socket, if any. */
  socket(): WhatsAppSocket | undefined;
  /** Recent inbound messages by `<chat>/<id>` (the quoted message of a group answer). */
  recent: ReadonlyMap<string, WAMessage>;
  presence: boolean;
  pauseAfterMs: number;
  log: HubLogger;
  /** Whether this process still holds the account (checked right before every send). */
  leaseValid(): boolean;
}

/**
 * The WhatsApp message id of a segment: a hash of its identity (reply + position), in the shape baileys
 * gives its own ids (`3EB0` and 18 hex digits). A resend of the same segment (after a crash, a timeout,
 * a retry) goes out under the same id, as WhatsApp's own apps resend a message they got no
 * acknowledgement for (that a recipient then shows it once is not checked against WhatsApp here).
 */
export function messageIdOf(segment: Pick<OutboundSegment, "replyId" | "index">): string {
  return `3EB0${segmentIdentityDigest(segment).toString("hex").slice(0, 18).toUpperCase()}`;
}

/**
 * Sends answers and presence: rendered text, the triggering message quoted
 * on the first segment of a group answer, `composing` while a run refreshes
 * typing and `paused` after its last segment (or once the refreshes stop).
 */
export class Outbound {
  readonly #pauses = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly deps: OutboundDeps) {}

  async send(segment: OutboundSegment, target: ReplyTarget): Promise<SendResult> {
    const socket = this.deps.socket();
    if (!socket) throw new Error("WhatsApp is not connected; the segment is retried once it is");
    if (!this.deps.leaseValid())
      throw new Error("this hub process no longer holds the WhatsApp account; another one sends");
    const quoted =
      segment.index === 0 && target.replyToMessageId
        ? this.#quoted(target, target.replyToMessageId)
        : undefined;
    let sent: WAMessage | undefined;
    try {
      sent = await socket.sendMessage(
        target.chatId,
        segment.attachment
          ? await mediaContent(segment.attachment, segment.text)
          : { text: renderWhatsApp(segment.text) },
        { messageId: messageIdOf(segment), ...(quoted ? { quoted } : {}) },
      );
    } catch (error) {
      throw classifySendError(error);
    }
    if (segment.last) this.#pause(target.chatId, 0);
    const id = sent?.key?.id;
    return id ? { messageId: id } : {};
  }

  /** The message to quote: the remembered one, or its key alone (enough for WhatsApp to link the quote). */
  #quoted(target: ReplyTarget, ref: string): WAMessage {
    const { id, participant } = decodeQuoteRef(ref);
    const remembered = this.deps.recent.get(`${target.chatId}/${id}`);
    if (remembered) return remembered;
    return {
      key: { remoteJid: target.chatId, id, fromMe: false, ...(participant ? { participant } : {}) },
      message: { conversation: "" },
    } as WAMessage;
  }

  /** Presence `composing` in the chat; `paused` follows unless the run refreshes it in time. */
  async composing(target: ReplyTarget): Promise<void> {
    const socket = this.deps.socket();
    if (!this.deps.presence || !socket) return;
    await socket.sendPresenceUpdate("composing", target.chatId);
    this.#pause(target.chatId, this.deps.pauseAfterMs);
  }

  #pause(chatId: string, afterMs: number): void {
    if (!this.deps.presence) return;
    const pending = this.#pauses.get(chatId);
    if (pending) clearTimeout(pending);
    else if (afterMs === 0) return;
    const timer = setTimeout(() => {
      this.#pauses.delete(chatId);
      this.deps
        .socket()
        ?.sendPresenceUpdate("paused", chatId)
        .catch((error) => this.deps.log.debug({ err: describeError(error) }, "whatsapp presence not sent"));
    }, afterMs);
    timer.unref?.();
    this.#pauses.set(chatId, timer);
  }

  clear(): void {
    for (const timer of this.#pauses.values()) clearTimeout(timer);
    this.#pauses.clear();
  }
}

/**
 * The code of a failed send: baileys throws WhatsApp's error stanzas as a Boom
 * whose `data` is the stanza's code (`rate-overlimit` is 429), and connection
 * failures as a Boom with `output.statusCode`.
 */
function sendErrorCode(error: unknown): number | undefined {
  const data = (error as { data?: unknown } | undefined)?.data;
  if (typeof data === "number" && data >= 400 && data < 600) return data;
  if (error instanceof Error && /rate-overlimit/i.test(error.message)) return 429;
  return closeCode(error);
}

/** A failed send as the delivery layer acts on it: rate limited, refused for good, or retried. */
function classifySendError(error: unknown): unknown {
  const code = sendErrorCode(error);
  // WhatsApp names no wait; 5 s keeps the chat quiet long enough without stalling the answer.
  if (code === 429) return new RateLimitedError(5000);
  if (code === 400 || code === 403 || code === 404 || code === 406)
    return new PermanentSendError(`WhatsApp refused the message (${describeError(error)})`, {
      cause: error,
      chatRefuses: chatRefusesStatus(code),
    });
  return error;
}
