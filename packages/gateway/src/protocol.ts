import { isMessageRunId } from "@hub/core";
import { z } from "zod";

/** Version of the gateway protocol, announced in the `connect` response. */
export const PROTOCOL_VERSION = 1;

/** A request's id, echoed in its response. */
export const RequestIdSchema = z.union([z.string().min(1).max(128), z.number().int()]);

/** A request frame from a client. */
export const RequestFrameSchema = z
  .object({
    type: z.literal("req"),
    id: RequestIdSchema,
    method: z.string().min(1).max(64),
    params: z.unknown().optional(),
  })
  .strict();
/** A client request. */
export type RequestFrame = z.infer<typeof RequestFrameSchema>;

/** The answer to a request. */
export type ResponseFrame =
  | { type: "res"; id: string | number | null; ok: true; payload: unknown }
  | { type: "res"; id: string | number | null; ok: false; error: { code: string; message: string } };

/** A server-pushed event; `seq` counts the events sent on this connection, from 0. */
export interface EventFrame {
  type: "event";
  event: string;
  payload: unknown;
  seq: number;
}

/** Params of `connect`, the mandatory first request. */
export const ConnectParamsSchema = z
  .object({
    auth: z.union([
      z.object({ token: z.string().min(1).max(512) }).strict(),
      z.object({ password: z.string().min(1).max(512) }).strict(),
      // connectProof(token, nonce) for the nonce `connect.challenge` answered on this connection.
      z.object({ proof: z.string().min(1).max(128) }).strict(),
    ]),
    client: z.string().max(128).optional(),
  })
  .strict();

/** Params of `chat.send`. */
export const ChatSendParamsSchema = z
  .object({
    sessionKey: z.string().min(1).max(512).optional(),
    text: z.string().min(1).max(32_000),
    idempotencyKey: z
      .string()
      .min(8)
      .max(128)
      .regex(/^[A-Za-z0-9_.-]+$/, "use letters, digits, '.', '_' or '-'")
      .refine(
        (key) => !isMessageRunId(key),
        "a version-8 UUID names a platform message's run here; use a random UUID (crypto.randomUUID()) or another key",
      ),
  })
  .strict();

/** Params of `chat.history`. */
export const ChatHistoryParamsSchema = z
  .object({
    sessionKey: z.string().min(1).max(512).optional(),
    limit: z.number().int().min(1).max(1000).default(200),
  })
  .strict();

/** Params of `chat.abort`. */
export const ChatAbortParamsSchema = z.object({ runId: z.string().min(1).max(128) }).strict();

/** Methods a connected client may call. */
export const METHODS = [
  "chat.send",
  "chat.history",
  "chat.abort",
  "health",
  "channels.status",
  "pairing.list",
  "pairing.approve",
] as const;

/** Params of `pairing.approve`. */
export const PairingApproveParamsSchema = z
  .object({ channel: z.string().min(1).max(64), code: z.string().min(4).max(16) })
  .strict();
