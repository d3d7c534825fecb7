import type { HubLogger } from "@hub/core";
import makeWASocket, {
  type BaileysEventMap,
  Browsers,
  downloadMediaMessage,
  makeCacheableSignalKeyStore,
  type WAMessage,
  type WAMessageKey,
  type WAPresence,
} from "@whiskeysockets/baileys";
import { clearAuthState, isLinked, useAtomicAuthState } from "./auth-state.js";

/** The events of a baileys socket the adapter listens to. */
export type WhatsAppEventMap = Pick<
  BaileysEventMap,
  "connection.update" | "messages.upsert" | "creds.update"
>;

/**
 * The small part of a baileys socket (`makeWASocket`'s result) the adapter
 * uses. Tests pass an event emitter with these methods and drive it with real
 * `proto.WebMessageInfo` objects; production passes the real socket.
 */
export interface WhatsAppSocket {
  readonly ev: {
    on<E extends keyof WhatsAppEventMap>(event: E, listener: (arg: WhatsAppEventMap[E]) => void): unknown;
  };
  /** The linked account (`creds.me`): `id` is a device JID, `lid` its LID. */
  readonly user?: { id: string; lid?: string | undefined; name?: string | undefined } | undefined;
  sendMessage(
    jid: string,
    /** A text or media message, or a reaction to the message `key` (`text: ""` removes the reaction). */
    content: import("./send-file.js").WhatsAppContent | { react: { text: string; key: WAMessageKey } },
    /** `messageId` replaces the random id baileys would give the message. */
    options?: { quoted?: WAMessage; messageId?: string },
  ): Promise<WAMessage | undefined>;
  sendPresenceUpdate(type: WAPresence, jid?: string): Promise<void>;
  /** Closes the socket (a `connection.update` close follows). */
  end(error: Error | undefined): void;
}

/** How the adapter gets sockets: one per connection attempt, from the linked device's stored credentials. */
export interface WhatsAppConnector {
  /** Whether a device is linked (credentials with the account's id exist). */
  isLinked(): Promise<boolean>;
  /** Opens a new socket with the stored credentials. */
  open(): Promise<WhatsAppSocket>;
  /** Removes the credentials of a device WhatsApp logged out. */
  forget(): Promise<void>;
  /** Starts downloading the media of a received message (images, documents...), decrypted, as a stream. */
  download?(message: WAMessage): Promise<AsyncIterable<Uint8Array>>;
}

/** Options of the production socket: the credentials folder and a logger for baileys (warnings and up). */
export interface BaileysConnectorOptions {
  authDir: string;
  logger: HubLogger;
}

/**
 * Opens a real baileys socket with the atomic file auth state: creds are
 * saved on every `creds.update`, the signal keys go through baileys' cache,
 * `markOnlineOnConnect` is off (the phone keeps its notifications) and no
 * full history is synced (old messages are never answered anyway).
 */
export async function openBaileysSocket(
  options: BaileysConnectorOptions,
): Promise<WhatsAppSocket & ReturnType<typeof makeWASocket>> {
  const { state, saveCreds } = await useAtomicAuthState(options.authDir);
  // baileys is chatty below warn; a quieter hub level (error, silent) stays quieter.
  const level = options.logger.levelVal > 40 ? options.logger.level : "warn";
  const logger = options.logger.child({ component: "baileys" }, { level });
  const sock = makeWASocket({
    auth: { creds: state.creds, keys: makeCacheableSignalKeyStore(state.keys, logger) },
    logger,
    browser: Browsers.macOS("Chrome"),
    markOnlineOnConnect: false,
    syncFullHistory: false,
  });
  sock.ev.on("creds.update", () => {
    saveCreds().catch((error) => options.logger.error({ err: String(error) }, "whatsapp creds not saved"));
  });
  return sock;
}

/** The production connector: real baileys sockets on the credentials in `authDir`. */
export function baileysConnector(options: BaileysConnectorOptions): WhatsAppConnector {
  return {
    isLinked: () => isLinked(options.authDir),
    open: () => openBaileysSocket(options),
    forget: () => clearAuthState(options.authDir),
    download: (message) => downloadMediaMessage(message, "stream", {}),
  };
}
