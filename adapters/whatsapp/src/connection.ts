import { DisconnectReason } from "@whiskeysockets/baileys";

/** What a closed connection means for the account: reconnect, a new login, or stop and report. */
export type CloseVerdict =
  | { action: "reconnect"; reason: string; immediate: boolean }
  | { action: "logged_out"; reason: string }
  | { action: "stop"; reason: string };

/** The status code of a `connection.update` close (`lastDisconnect.error.output.statusCode`, a Boom). */
export function closeCode(error: unknown): number | undefined {
  const code = (error as { output?: { statusCode?: unknown } } | undefined)?.output?.statusCode;
  return typeof code === "number" ? code : undefined;
}

/**
 * Reads a close the way baileys' codes mean it (baileys never reconnects by
 * itself): 401 logged out (the credentials are dead: link again); 440 another
 * session replaced this one and 403/411 the account or device was refused
 * (reconnecting would fight it or loop: stop and report); 515 restart required
 * (expected after linking: reconnect at once); anything else (428 closed, 408
 * timed out or lost, 500 bad session, 503 unavailable, a network error) is
 * recoverable: reconnect with backoff.
 *
 * `leaseLapsed`: this process holds the account through a lease it could not renew in time (Redis
 * unreachable). A 440 then most likely means another hub process took the account over, as the lease
 * allowed it to: reconnecting goes back to waiting for the lease, where this process stands by.
 */
export function classifyClose(error: unknown, leaseLapsed = false): CloseVerdict {
  const code = closeCode(error);
  const detail = error instanceof Error && error.message ? `: ${error.message}` : "";
  switch (code) {
    case DisconnectReason.loggedOut:
      return {
        action: "logged_out",
        reason:
          'WhatsApp logged this device out (401); link it again with "hub channels login whatsapp" (the old credentials were removed)',
      };
    case DisconnectReason.connectionReplaced:
      if (leaseLapsed)
        return {
          action: "reconnect",
          reason:
            "another session replaced this one (440) after this process could not renew its account lease; another hub process has most likely taken the account over",
          immediate: true,
        };
      return {
        action: "stop",
        reason:
          "another WhatsApp Web session replaced this one (440 conflict); stop the other client or hub using this number, then restart the hub",
      };
    case DisconnectReason.forbidden:
      return { action: "stop", reason: `WhatsApp refused this account (403)${detail}` };
    case DisconnectReason.multideviceMismatch:
      return {
        action: "stop",
        reason: 'WhatsApp refused this linked device (411); link again with "hub channels login whatsapp"',
      };
    case DisconnectReason.restartRequired:
      return { action: "reconnect", reason: "restart required (515)", immediate: true };
    default:
      return {
        action: "reconnect",
        reason: `connection closed (${code ?? "no status"}${detail})`,
        immediate: false,
      };
  }
}
