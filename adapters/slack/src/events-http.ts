import type { IncomingMessage, ServerResponse } from "node:http";
import type { HubLogger } from "@hub/core";
import { z } from "zod";
import { verifySlackSignature } from "./signature.js";

/** Largest Events API body accepted (Slack's events are a few KB). */
export const MAX_EVENT_BYTES = 1024 * 1024;

/** How long a request may wait for admission before it is acknowledged anyway (Slack wants 3 s). */
export const ACK_DEADLINE_MS = 2500;

const EnvelopeSchema = z.looseObject({
  type: z.string(),
  challenge: z.string().optional(),
  event_id: z.string().optional(),
  event: z.looseObject({ type: z.string() }).optional(),
});

/** One Events API request that passed the signature check, as the adapter processes it. */
export interface SlackEnvelope {
  body: Record<string, unknown>;
  retryNum?: number | undefined;
  retryReason?: string | undefined;
}

/** What the route needs: the signing secret and what to do with a verified event. */
export interface EventsRouteOptions {
  signingSecret: string;
  logger: HubLogger;
  /** Processes one event; resolves once it was admitted (or deliberately dropped). Throws to make Slack retry. */
  process(envelope: SlackEnvelope): Promise<void>;
  ackDeadlineMs?: number;
}

/** Reads the raw body, giving up past `limit` bytes (undefined). */
async function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * The Events API endpoint: verifies Slack's signature over the raw body (401 otherwise, nothing
 * runs), answers `url_verification`, and acknowledges an event once it is admitted, or after
 * `ackDeadlineMs` at the latest (admission then finishes in the background). A failure to admit
 * within the deadline answers 500, so Slack retries; the retry is deduplicated by the hub.
 */
export function createEventsHandler(
  options: EventsRouteOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const log = options.logger;
  return async (req, res) => {
    const raw = await readBody(req, MAX_EVENT_BYTES);
    if (raw === undefined) {
      log.warn({ limit: MAX_EVENT_BYTES }, "slack event body too large; refused");
      res.writeHead(413).end();
      req.resume();
      return;
    }
    const why = verifySlackSignature(
      options.signingSecret,
      { signature: header(req, "x-slack-signature"), timestamp: header(req, "x-slack-request-timestamp") },
      raw,
    );
    if (why) {
      log.warn(
        { remote: req.socket.remoteAddress, why },
        "slack event refused: the signature does not verify",
      );
      res.writeHead(401).end();
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      json = undefined;
    }
    const envelope = EnvelopeSchema.safeParse(json);
    if (!envelope.success) {
      // Signed by Slack but unreadable: acknowledge and drop it, so it is never retried forever.
      log.warn("slack event body is not an Events API envelope; dropped");
      res.writeHead(200).end();
      return;
    }
    if (envelope.data.type === "url_verification") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ challenge: envelope.data.challenge ?? "" }));
      return;
    }
    const retryNum = header(req, "x-slack-retry-num");
    const outcome = await withDeadline(
      options.process({
        body: envelope.data,
        retryNum: retryNum === undefined ? undefined : Number(retryNum),
        retryReason: header(req, "x-slack-retry-reason"),
      }),
      options.ackDeadlineMs ?? ACK_DEADLINE_MS,
      (error) =>
        log.error({ err: error, eventId: envelope.data.event_id }, "slack event failed after its ack"),
    );
    if (outcome === "failed") {
      res.writeHead(500).end();
      return;
    }
    res.writeHead(200).end();
  };
}

/** Waits for `work` at most `ms`: `done`, `failed`, or `late` (a later failure goes to `onLateError`). */
async function withDeadline(
  work: Promise<void>,
  ms: number,
  onLateError: (error: unknown) => void,
): Promise<"done" | "failed" | "late"> {
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  const deadline = new Promise<"late">((resolve) => {
    timer = setTimeout(() => {
      late = true;
      resolve("late");
    }, ms);
  });
  const settled = work.then(
    () => "done" as const,
    (error: unknown) => {
      if (late) onLateError(error);
      return "failed" as const;
    },
  );
  try {
    return await Promise.race([settled, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
