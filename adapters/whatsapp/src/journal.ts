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

/** The journal of one account, under the hub's state directory. */
export function messageJournal(stateDir: string, accountId: string, logger?: HubLogger): MessageJournal {
  return new AckJournal(
    join(stateDir, "whatsapp", accountId, "received"),
    z.record(z.string(), z.unknown()),
    logger,
    "whatsapp",
  );
}

/**
 * What the journal keeps of a received message: protobuf JSON, from which `fromJournal` rebuilds it with
 * its media keys as bytes (a plain `JSON.stringify` of a decoded message turns them into objects of digits).
 */
export function toJournal(raw: unknown): JournaledMessage {
  return proto.WebMessageInfo.fromObject(raw as Record<string, unknown>).toJSON();
}

/** A journaled message as the socket delivered it. */
export function fromJournal(json: JournaledMessage): proto.WebMessageInfo {
  return proto.WebMessageInfo.fromObject(json);
}
