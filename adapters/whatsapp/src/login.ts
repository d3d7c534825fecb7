import { describeError, HubError, sleep } from "@hub/core";
import QRCode from "qrcode";
import { closeCode } from "./connection.js";
import type { WhatsAppSocket } from "./socket.js";

/** A socket that can also ask for a pairing code (baileys' `requestPairingCode`). */
export interface LoginSocket extends WhatsAppSocket {
  requestPairingCode(phoneNumber: string): Promise<string>;
}

/** What the login flow needs: sockets on the account's stored credentials, and where to show progress. */
export interface LoginOptions {
  open(): Promise<LoginSocket>;
  /** Shows one line (or a QR code block) to the person linking. */
  print(text: string): void;
  /** Link with a pairing code for this phone number instead of a QR code. */
  phone?: string | undefined;
  /** Gives up after this long (ms); default 3 minutes. */
  timeoutMs?: number;
  /** Connections to open at most (WhatsApp asks for one restart after pairing). */
  maxConnections?: number;
  /** Wait before opening again after a failed connection (ms; not after a 515 restart). Default 2 s. */
  retryDelayMs?: number;
  /** Hears each code shown (to show it elsewhere too, e.g. the owner's web chat), and undefined at the end. */
  onLink?(link: { qr?: string; pairingCode?: string } | undefined): Promise<void>;
}

/** Digits only, with the country code (what `requestPairingCode` takes), or a clear error. */
export function pairingPhone(phone: string): string {
  const digits = phone.replace(/[\s\-().+]/g, "");
  if (!/^\d{8,15}$/.test(digits))
    throw new HubError(
      "whatsapp_phone",
      `"${phone}" is not a phone number; give it with the country code, e.g. --phone +4915112345678.`,
    );
  return digits;
}

/** The QR code of a `connection.update` as terminal text. */
export function qrForTerminal(qr: string): Promise<string> {
  return QRCode.toString(qr, { type: "terminal", small: true });
}

type Attempt = { linked: true; name: string } | { linked: false; retry: boolean; reason: string };

/** What a close during the login means: open again (515, a network failure) or give up. */
function closeOutcome(error: unknown, qrSeen: boolean): Attempt {
  const code = closeCode(error);
  if (code === 515) return { linked: false, retry: true, reason: "restart required after pairing" };
  if (code === 401) return { linked: false, retry: false, reason: "WhatsApp refused the link (401)" };
  if (code === 408 && qrSeen)
    return { linked: false, retry: false, reason: "the codes expired before the phone linked (408)" };
  if (code === 408)
    return {
      linked: false,
      retry: true,
      reason: `WhatsApp could not be reached (408: ${describeError(error)})`,
    };
  return { linked: false, retry: true, reason: `connection closed (${code ?? describeError(error)})` };
}

function showPairingCode(code: string, print: (text: string) => void): void {
  print(`Pairing code: ${code.length === 8 ? `${code.slice(0, 4)}-${code.slice(4)}` : code}`);
  print(
    "On your phone: WhatsApp > Settings > Linked devices > Link a device > Link with phone number instead, then enter the code. Waiting…",
  );
}

/**
 * One connection of the login: shows each QR code (or asks once for a pairing
 * code), resolves when the device is linked and open, or when the connection
 * closes (515 after pairing: open again; 408 after a code: expired; 401: refused).
 */
function attempt(
  socket: LoginSocket,
  options: LoginOptions,
  state: { codeShown: boolean; qrSeen: boolean },
): Promise<Attempt> {
  return new Promise((resolve) => {
    socket.ev.on("connection.update", (update) => {
      if (update.qr) state.qrSeen = true;
      if (update.qr && !options.phone) {
        void options.onLink?.({ qr: update.qr }).catch(() => undefined);
        void qrForTerminal(update.qr).then((text) => {
          options.print(text);
          options.print(
            "Scan it with WhatsApp on your phone: Settings > Linked devices > Link a device. Waiting…",
          );
        });
      }
      if (update.qr && options.phone && !state.codeShown) {
        state.codeShown = true;
        socket
          .requestPairingCode(pairingPhone(options.phone))
          .then((code) => {
            showPairingCode(code, options.print);
            void options.onLink?.({ pairingCode: code }).catch(() => undefined);
          })
          .catch((error) =>
            resolve({ linked: false, retry: false, reason: `no pairing code (${describeError(error)})` }),
          );
      }
      if (update.connection === "open") resolve({ linked: true, name: socket.user?.id ?? "this account" });
      if (update.connection === "close") resolve(closeOutcome(update.lastDisconnect?.error, state.qrSeen));
    });
  });
}

/**
 * Links a device interactively: a QR code in the terminal, or with `phone` a
 * pairing code, with a line for each step until WhatsApp confirms the link.
 * Reopens the connection WhatsApp restarts after pairing (515); gives up with
 * a clear error when the codes expire, the link is refused, or time runs out.
 */
export async function linkDevice(options: LoginOptions): Promise<{ name: string }> {
  // A number that cannot be used is said before anything connects.
  if (options.phone !== undefined) pairingPhone(options.phone);
  try {
    return await linkLoop(options);
  } finally {
    await options.onLink?.(undefined).catch(() => undefined);
  }
}

async function linkLoop(options: LoginOptions): Promise<{ name: string }> {
  const deadline = Date.now() + (options.timeoutMs ?? 180_000);
  const state = { codeShown: false, qrSeen: false };
  let last = "no connection";
  for (let n = 0; n < (options.maxConnections ?? 5) && Date.now() < deadline; n++) {
    options.print(n === 0 ? "Connecting to WhatsApp…" : `Reconnecting (${last})…`);
    const socket = await options.open();
    const timer = setTimeout(
      () => socket.end(new Error("login timed out")),
      Math.max(0, deadline - Date.now()),
    );
    const result = await attempt(socket, options, state);
    clearTimeout(timer);
    if (result.linked) {
      options.print(`Linked as ${result.name}. The hub connects with this device from now on.`);
      // Let the last credential writes land before the socket goes.
      await new Promise((r) => setTimeout(r, 1500));
      socket.end(undefined);
      return { name: result.name };
    }
    socket.end(undefined);
    last = result.reason;
    if (!result.retry) break;
    if (!last.startsWith("restart required")) await sleep(options.retryDelayMs ?? 2000);
  }
  throw new HubError(
    "whatsapp_login_failed",
    `WhatsApp was not linked: ${last}. Run "hub channels login whatsapp" again.`,
  );
}
