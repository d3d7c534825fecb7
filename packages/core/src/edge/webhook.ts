import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { HttpRoute } from "../channel.js";
import type { HubLogger } from "../logger.js";
import type { InboundResult } from "../plugin.js";
import { type ByteBudget, unverifiedBodies } from "./byte-budget.js";
import { describeError } from "./errors.js";

/**
 * Whether `signatureHex` is the HMAC-SHA256 of `data`, compared in constant time. Exactly the
 * lower-case hex digest platforms send (Slack): upper case or an extra digit is refused, as the
 * platforms' own libraries refuse it (Node's hex decoding would drop an odd last digit).
 */
export function sameHmacSha256(secret: string, data: string | Buffer, signatureHex: string): boolean {
  const expected = createHmac("sha256", secret).update(data).digest();
  if (signatureHex.length !== expected.length * 2 || !/^[0-9a-f]+$/.test(signatureHex)) return false;
  return timingSafeEqual(Buffer.from(signatureHex, "hex"), expected);
}

/** What a webhook's `verify` sees: the request and its raw body (signatures cover the bytes). */
export interface WebhookRequest {
  req: IncomingMessage;
  rawBody: Buffer;
}

/** Options of `webhookRoute`. */
export interface WebhookRouteOptions {
  path: string;
  /** Largest body accepted (bytes); a larger one is answered 413 without reading it all. Default 1 MiB. */
  maxBytes?: number;
  /**
   * Where the body of a caller not verified by its headers is accounted while it is read and checked
   * (default the process's `unverifiedBodies`); with the budget spent, a call is answered 503 and its
   * connection closed (the platform resends it), so strangers cannot make the hub hold unbounded memory.
   */
  unverifiedBudget?: ByteBudget;
  /**
   * Checks the caller (a secret header compared with `sameSecret`, or an HMAC
   * signature with `sameHmacSha256`); false, or a sentence saying why, answers
   * 401 and nothing else happens (one log line, with the why).
   */
  verify(request: WebhookRequest): boolean | string;
  /**
   * Checks the caller from the headers alone, before any of the body is read (a secret header): a
   * stranger's call is answered 401 at once and the connection closed, so no upload of theirs is held.
   * Same answers as `verify`; `verify` still runs on the body afterwards.
   */
  verifyHeaders?(req: IncomingMessage): boolean | string;
  /**
   * Reads a verified body (JSON by default); throwing means it can never be read (acknowledged, one log
   * line). For a platform that also posts forms to the same URL.
   */
  parseBody?(request: WebhookRequest): unknown;
  /**
   * Handles one parsed JSON body. The answer decides the status: `retry` is
   * 503 (the platform redelivers), everything else 200 — a payload that can
   * never be accepted is acknowledged, never retried forever. Throwing counts as `retry`.
   */
  handle(body: unknown, request: WebhookRequest): Promise<InboundResult>;
  /**
   * The longest the caller waits for `handle` (ms; default: as long as it takes). Past it the call is
   * answered 503 (the platform redelivers) while the handling goes on: a redelivery of what it then takes
   * is a duplicate. A hub whose Redis is down or frozen would otherwise hold every webhook call open.
   */
  answerWithinMs?: number;
  /** A body to send with the 200 (e.g. a challenge answer); none by default. */
  respond?(body: unknown, result: InboundResult): { contentType: string; body: string } | undefined;
  logger: HubLogger;
}

class BodyTooLargeError extends Error {}
class BudgetSpentError extends Error {}

/**
 * Reads a body of at most `maxBytes`. With a `budget`, each chunk is accounted there as it arrives (and
 * all of it given back by the caller through `held`): a connection that declares a large body and sends
 * nothing holds nothing, so idle strangers cannot spend the budget that signed calls need.
 */
async function readCapped(
  req: IncomingMessage,
  maxBytes: number,
  budget: ByteBudget | undefined,
  held: { bytes: number },
): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > maxBytes) throw new BodyTooLargeError();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const bytes = (chunk as Buffer).length;
    size += bytes;
    if (size > maxBytes) throw new BodyTooLargeError();
    if (budget) {
      if (!budget.take(bytes)) throw new BudgetSpentError();
      held.bytes += bytes;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * Reads the body (within `maxBytes`, and within the unverified-body budget unless `verifyHeaders` already
 * checked the caller) and checks the caller on it; undefined once the call was answered (413, 400, 401,
 * or 503 with the budget spent).
 */
async function readVerified(
  options: WebhookRouteOptions,
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
): Promise<WebhookRequest | undefined> {
  const budget = options.verifyHeaders ? undefined : (options.unverifiedBudget ?? unverifiedBodies);
  const held = { bytes: 0 };
  try {
    const rawBody = await readCapped(req, maxBytes, budget, held).catch((error: unknown) => {
      unreadable(options, req, res, error, maxBytes, budget);
      return undefined;
    });
    if (!rawBody) return undefined;
    const verified = options.verify({ req, rawBody });
    if (verified === true) return { req, rawBody };
    refused(options, req, verified);
    answer(res, 401, req);
    return undefined;
  } finally {
    budget?.give(held.bytes);
  }
}

// A body that could not be read whole: too large (413), past the unverified-body budget (503: the platform
// resends), or the caller went away mid-body (nothing was handled, nothing to retry on our side).
function unreadable(
  options: WebhookRouteOptions,
  req: IncomingMessage,
  res: ServerResponse,
  error: unknown,
  maxBytes: number,
  budget: ByteBudget | undefined,
): void {
  const log = options.logger;
  if (error instanceof BodyTooLargeError) {
    log.warn({ path: options.path, maxBytes }, "webhook body too large; dropped");
    answer(res, 413, req, true);
    return;
  }
  if (error instanceof BudgetSpentError) {
    log.warn(
      { path: options.path, heldBytes: budget?.held },
      "webhook bodies of callers not verified yet are at their memory limit; answered 503 (the platform resends)",
    );
    answer(res, 503, req, true);
    return;
  }
  log.warn({ path: options.path, err: describeError(error) }, "webhook body could not be read; dropped");
  answer(res, 400, req);
}

// `unread`: the body was not (all) read; the connection is closed instead of taking the rest.
function answer(res: ServerResponse, status: number, req: IncomingMessage, unread = false): void {
  if (!res.headersSent) res.writeHead(status, unread ? { connection: "close" } : {});
  res.end();
  req.resume();
}

function refused(options: WebhookRouteOptions, req: IncomingMessage, verified: boolean | string): void {
  const why = typeof verified === "string" ? { why: verified } : {};
  options.logger.warn(
    { path: options.path, remote: req.socket.remoteAddress, ...why },
    "webhook call failed verification; refused",
  );
}

/**
 * A webhook endpoint for the gateway, with what every platform's webhook needs
 * once: a capped body, the caller check, JSON parsing, and the status that
 * makes the platform retry only our transient failures. A verified body that
 * is not JSON (empty, a form, garbage) or a payload that cannot be read is
 * acknowledged with 200 and one log line: redelivering it would never help.
 */
export function webhookRoute(options: WebhookRouteOptions): HttpRoute {
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  const log = options.logger;
  return {
    method: "POST",
    path: options.path,
    handle: async (req, res) => {
      const caller = options.verifyHeaders?.(req) ?? true;
      if (caller !== true) {
        refused(options, req, caller);
        return answer(res, 401, req, true);
      }
      const request = await readVerified(options, req, res, maxBytes);
      if (!request) return;
      const { rawBody } = request;
      let body: unknown;
      try {
        body = options.parseBody ? options.parseBody(request) : JSON.parse(rawBody.toString("utf8"));
      } catch {
        // From the verified platform, yet unreadable: a retry would carry the same bytes, so it is acknowledged.
        log.warn(
          { path: options.path, bytes: rawBody.length, contentType: req.headers["content-type"] },
          "webhook body cannot be read; acknowledged and dropped",
        );
        return answer(res, 200, req);
      }
      const result = await handledWithin(options, body, request);
      if (result.kind === "retry") {
        log.error(
          { path: options.path, reason: result.reason },
          "webhook update not accepted now; the platform will retry",
        );
        return answer(res, 503, req);
      }
      const reply = options.respond?.(body, result);
      if (reply) res.writeHead(200, { "content-type": reply.contentType }).end(reply.body);
      else answer(res, 200, req);
    },
  };
}

// The handling's result (a throw is `retry`), or `retry` once `answerWithinMs` has passed without one.
async function handledWithin(
  options: WebhookRouteOptions,
  body: unknown,
  request: WebhookRequest,
): Promise<InboundResult> {
  const handled = options
    .handle(body, request)
    .catch((error: unknown): InboundResult => ({ kind: "retry", reason: describeError(error) }));
  const ms = options.answerWithinMs;
  if (ms === undefined) return handled;
  let timer: NodeJS.Timeout | undefined;
  let answered = false;
  const late = new Promise<InboundResult>((resolve) => {
    timer = setTimeout(() => {
      answered = true;
      resolve({
        kind: "retry",
        reason: `not taken within ${ms / 1000} s (is Redis reachable?); taking it goes on, a redelivery is a duplicate then`,
      });
    }, ms);
  });
  // What became of a handling answered 503 meanwhile: said once it is known.
  void handled.then((result) => {
    if (answered)
      options.logger.info(
        {
          path: options.path,
          outcome: result.kind,
          ...("reason" in result ? { reason: result.reason } : {}),
        },
        "a webhook update answered 503 for being slow was handled after all",
      );
  });
  try {
    return await Promise.race([handled, late]);
  } finally {
    clearTimeout(timer);
  }
}
