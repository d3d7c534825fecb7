import { join } from "node:path";
import { AckJournal, type HubLogger } from "@hub/core";
import { proto } from "@whiskeysockets/baileys";
import { z } from "zod";

/** A message as the journal keeps it: the WebMessageInfo's protobuf JSON (bytes as base64, uint64 as strings). */
export type JournaledMessage = Record<string, unknown>;

/**
 * Messages from receipt until their admission is decided. WhatsApp's socket acknowledges every message
 * it receives and never delivers it again, so a message the hub could not admit yet (Redis down) or was
 * admitting when the process died is kept here and admitted by this process's next try or the next start.
 */
export type MessageJournal = AckJournal<JournaledMessage>;

/**
 * The journal of one account, under the hub's state directory: `whatsapp-received/<accountId>`, beside the
 * account's credentials folder (`whatsapp/<accountId>` by default), not in it: a logout clears that folder.
 */
export function messageJournal(stateDir: string, accountId: string, logger?: HubLogger): MessageJournal {
  return new AckJournal(
    join(stateDir, "whatsapp-received", accountId),
    z.record(z.string(), z.unknown()),
    logger,
    "whatsapp",
  );
}

/**
 * What the journal keeps of a received message: protobuf JSON, from which `fromJournal` rebuilds it with
 * its media keys as bytes (a plain `JSON.stringify` of a decoded message turns them into objects of digits),
 * and its key as the socket gave it: baileys adds fields of its own to the key after decoding (the sender's
 * phone JID beside a LID, `remoteJidAlt` / `participantAlt`), which protobuf JSON leaves out.
 */
export function toJournal(raw: unknown): JournaledMessage {
  const json = proto.WebMessageInfo.fromObject(raw as Record<string, unknown>).toJSON();
  const key = scalarFields((raw as { key?: unknown } | null)?.key);
  return key ? { ...json, key: { ...key, ...(json.key as Record<string, unknown> | undefined) } } : json;
}

/** A journaled message as the socket delivered it. */
export function fromJournal(json: JournaledMessage): proto.WebMessageInfo {
  const message = proto.WebMessageInfo.fromObject(json);
  const key = scalarFields(json.key);
  if (message.key && key) {
    // The fields protobuf does not know (see `toJournal`); its own ones are read as it reads them.
    for (const [name, value] of Object.entries(key))
      if (!(name in message.key)) Object.assign(message.key, { [name]: value });
  }
  return message;
}

// A key's text, true/false and number fields (every field of a message key is one).
function scalarFields(key: unknown): Record<string, string | boolean | number> | undefined {
  if (typeof key !== "object" || key === null) return undefined;
  const out: Record<string, string | boolean | number> = {};
  for (const [name, value] of Object.entries(key))
    if (typeof value === "string" || typeof value === "boolean" || typeof value === "number")
      out[name] = value;
  return out;
}
