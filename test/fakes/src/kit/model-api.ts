// What the fake model APIs (OpenAI-compatible, Anthropic) share: reading and validating a JSON request,
// answering a scripted failure or hang, JSON answers, and the text helpers of their scripted replies.
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import { readBody } from "./http.js";

/** A scripted HTTP error of a fake model API: status, optional JSON body and optional `retry-after` seconds. */
export interface ScriptedFailure {
  status: number;
  body?: unknown;
  retryAfter?: number;
}

/** Answers with a JSON body (a string body is sent as it is). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(text);
}

/**
 * The request body parsed as JSON and checked against `schema`, or undefined after answering 400 with
 * `errorBody(message)`, the API's own error envelope.
 */
export async function readJsonRequest<S extends z.ZodType>(
  req: IncomingMessage,
  res: ServerResponse,
  schema: S,
  errorBody: (message: string) => unknown,
): Promise<z.infer<S> | undefined> {
  let json: unknown;
  try {
    json = JSON.parse((await readBody(req)).toString("utf8"));
  } catch {
    sendJson(res, 400, errorBody("Request body is not valid JSON"));
    return undefined;
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  sendJson(res, 400, errorBody(`Invalid request: ${parsed.error.message}`));
  return undefined;
}

/** Answers a scripted failure: its body, or `defaultBody` (the API's error for that status). */
export function sendFailure(res: ServerResponse, fail: ScriptedFailure, defaultBody: unknown): void {
  const headers: Record<string, string> = {};
  if (fail.retryAfter !== undefined) headers["retry-after"] = String(fail.retryAfter);
  sendJson(res, fail.status, fail.body ?? defaultBody, headers);
}

/** Sends headers and then never answers; resolves when the client goes away or the server closes. */
export async function hang(res: ServerResponse, streaming: boolean): Promise<void> {
  res.writeHead(200, { "content-type": streaming ? "text/event-stream" : "application/json" });
  res.flushHeaders();
  await once(res, "close");
}

/** `text` in pieces of `size` characters, as the APIs stream deltas. */
export function splitText(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** A rough token count (4 characters a token), for the usage the fakes report. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** The text of a message's content: the string itself, or its text parts joined (`type` when given must match). */
export function contentText(content: unknown, partType?: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) =>
      typeof part === "object" &&
      part !== null &&
      (partType === undefined || ("type" in part && part.type === partType)) &&
      "text" in part &&
      typeof part.text === "string"
        ? part.text
        : "",
    )
    .join("");
}
