import type { IncomingMessage } from "node:http";
import { boundaryOf, parseMultipart, readBody } from "../kit/index.js";
import type { TelegramFailure } from "./types.js";

// The Bot API's wire format: answers, error envelopes, and parameters read the way Telegram reads them.

/** One HTTP answer of the fake Bot API. */
export interface Answer {
  status: number;
  body: string;
}

/** Bot API call parameters as received. */
export type Params = Record<string, unknown>;

export const okAnswer = (result: unknown, description?: string): Answer => ({
  status: 200,
  body: JSON.stringify(description === undefined ? { ok: true, result } : { ok: true, result, description }),
});

export function errorAnswer(failure: TelegramFailure): Answer {
  const parameters: Record<string, number> = {};
  if (failure.error_code === 429) {
    // The Bot API always says how long to wait on 429; take it from the description if not given.
    const fromText = /retry after (\d+)/.exec(failure.description)?.[1];
    parameters.retry_after = failure.retry_after ?? (fromText ? Number(fromText) : 1);
  } else if (failure.retry_after !== undefined) parameters.retry_after = failure.retry_after;
  if (failure.migrate_to_chat_id !== undefined) parameters.migrate_to_chat_id = failure.migrate_to_chat_id;
  const body: Record<string, unknown> = {
    ok: false,
    error_code: failure.error_code,
    description: failure.description,
  };
  if (Object.keys(parameters).length > 0) body.parameters = parameters;
  return { status: failure.error_code, body: JSON.stringify(body) };
}

export const badRequest = (description: string): TelegramFailure => ({
  error_code: 400,
  description: `Bad Request: ${description}`,
});

export const GET_UPDATES_CONFLICT_WEBHOOK =
  "Conflict: can't use getUpdates method while webhook is active; " +
  "use deleteWebhook to delete the webhook first";
export const GET_UPDATES_CONFLICT_OTHER =
  "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";

export const CHAT_ACTIONS = new Set([
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "upload_document",
  "choose_sticker",
  "find_location",
  "record_video_note",
  "upload_video_note",
]);

export const MAX_MESSAGE_LENGTH = 4096;

/** Integer params arrive as numbers (JSON) or strings (form/query); Telegram accepts both. */
export function intParam(v: unknown): number | undefined {
  if (typeof v === "number" && Number.isInteger(v)) return v;
  if (typeof v === "string" && /^-?\d+$/.test(v.trim())) return Number(v.trim());
  return undefined;
}

export function strParam(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (typeof v === "number") return String(v);
  return undefined;
}

export function boolParam(v: unknown): boolean {
  return v === true || v === "true" || v === "1" || v === 1;
}

/** Object params arrive as objects (JSON) or JSON strings (form/query). */
export function objParam(v: unknown): Record<string, unknown> | undefined {
  let value = v;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Array params arrive as arrays (JSON) or JSON strings (form/query). */
export function arrayParam(v: unknown): unknown[] | undefined {
  let value = v;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return Array.isArray(value) ? value : undefined;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Reads params the way the Bot API does: query string, then JSON, urlencoded or multipart body. */
export async function readParams(req: IncomingMessage, url: URL): Promise<Params | undefined> {
  const params: Params = Object.fromEntries(url.searchParams);
  const raw = await readBody(req);
  if (raw.length === 0) return params;
  const type = String(req.headers["content-type"] ?? "").toLowerCase();
  if (type.includes("application/json")) {
    try {
      const parsed: unknown = JSON.parse(raw.toString("utf8"));
      return isRecord(parsed) ? { ...params, ...parsed } : undefined;
    } catch {
      return undefined;
    }
  }
  if (type.includes("application/x-www-form-urlencoded")) {
    return { ...params, ...Object.fromEntries(new URLSearchParams(raw.toString("utf8"))) };
  }
  if (type.includes("multipart/form-data")) {
    // grammY switches to multipart when uploading files (bare `filename=` parameters); file fields keep their bytes.
    const boundary = boundaryOf(String(req.headers["content-type"]));
    if (!boundary) return undefined;
    for (const part of parseMultipart(raw, boundary)) {
      params[part.name] =
        part.filename === undefined
          ? part.data.toString("utf8")
          : { filename: part.filename, size: part.data.length, data: part.data };
    }
    return params;
  }
  return params;
}
