import type { AckJournal, HttpRoute, HubLogger, InboundResult } from "@hub/core";
import { Backoff, describeError, formatIssues, sleep, webhookRoute } from "@hub/core";
import { z } from "zod";
import { isSslCheck, readSlackBody, SlackForm, slashCommandAnswer } from "./form-requests.js";
import { verifySlackSignature } from "./signature.js";

/** Largest Events API body accepted (Slack's events are a few KB). */
export const MAX_EVENT_BYTES = 1024 * 1024;

/** How long a request may wait for admission before it is acknowledged anyway (Slack wants 3 s). */
export const ACK_DEADLINE_MS = 2500;

const EnvelopeSchema = z.looseObject({
  type: z.string(),
  challenge: z.string().optional(),
  event_id: z.string().optional(),
});

/** One Events API delivery that passed the signature check, as the adapter processes it. */
export interface SlackEnvelope {
  body: Record<string, unknown>;
  retryNum?: number | undefined;
  retryReason?: string | undefined;
}

/** A journaled delivery read back (see `AckJournal`). */
export const SlackEnvelopeSchema: z.ZodType<SlackEnvelope> = z.object({
  body: z.record(z.string(), z.unknown()),
  retryNum: z.number().optional(),
  retryReason: z.string().optional(),
});

/** What the route needs: where it is, the signing secret, and what to do with a verified event. */
export interface EventsRouteOptions {
  path: string;
  signingSecret: string;
  logger: HubLogger;
  /** Processes one event; `retry` makes Slack redeliver it. */
  process(envelope: SlackEnvelope): Promise<InboundResult>;
  ackDeadlineMs?: number;
  /**
   * Waits between tries of an event whose admission failed after its ack (default 1 s doubling to 30 s). It is
   * tried until it is admitted or refused, for as long as the adapter runs: Slack will not send it again.
   */
  lateRetry?: { initialMs: number; maxMs: number };
  /** Aborted when the adapter stops: an event still being tried then stays in the journal for the next start. */
  stopped?: AbortSignal;
  /** Where an event acknowledged before its admission finished is kept until admitted (see `AckJournal`). */
  journal?: AckJournal<SlackEnvelope>;
}

const header = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/**
 * The Events API endpoint on the hub's server (the core's webhook route: capped body, 401 unless
 * the caller checks out, 503 only for our transient failures). The caller check is Slack's
 * signature over the raw body with a timestamp at most 5 minutes old; `url_verification` is
 * answered with its challenge; an event is acknowledged once admitted, or after `ackDeadlineMs`
 * at the latest (admission then finishes in the background, tried again if it fails, since Slack
 * does not resend what was acknowledged), so Slack never times out on us.
 */
export function slackEventsRoute(options: EventsRouteOptions): HttpRoute {
  const log = options.logger;
  return webhookRoute({
    path: options.path,
    maxBytes: MAX_EVENT_BYTES,
    logger: log,
    verify: ({ req, rawBody }) => {
      if (isSslCheck(req, rawBody)) return true;
      const why = verifySlackSignature(
        options.signingSecret,
        {
          signature: header(req.headers["x-slack-signature"]),
          timestamp: header(req.headers["x-slack-request-timestamp"]),
        },
        rawBody.toString("utf8"),
      );
      return why === undefined ? true : `not signed by Slack: ${why}`;
    },
    parseBody: ({ req, rawBody }) => readSlackBody(req, rawBody),
    handle: async (body, { req, rawBody }) => {
      if (isSslCheck(req, rawBody)) return { kind: "accepted" };
      if (body instanceof SlackForm) {
        // A slash command or an interaction sent here: signed, so acknowledged (a retry would be the same).
        log.warn(
          { command: body.command, interaction: body.fields.payload !== undefined },
          "slack form request (a slash command or interactivity URL set to the Events URL) is not handled; acknowledged",
        );
        return { kind: "rejected", reason: "a form request" };
      }
      const envelope = EnvelopeSchema.safeParse(body);
      if (!envelope.success) {
        // Signed by Slack, so a redelivery would be the same: acknowledged (200), never retried.
        log.warn(
          { reason: formatIssues(envelope.error.issues.slice(0, 3)) },
          "slack request is not an Events API envelope; acknowledged and dropped",
        );
        return { kind: "rejected", reason: "not an Events API envelope" };
      }
      if (envelope.data.type === "url_verification") {
        if (envelope.data.challenge !== undefined) return { kind: "accepted" };
        log.warn("slack url_verification without a challenge; acknowledged with nothing to echo");
        return { kind: "rejected", reason: "a url_verification without a challenge" };
      }
      const retryNum = header(req.headers["x-slack-retry-num"]);
      const delivery: SlackEnvelope = {
        body: envelope.data,
        retryNum: retryNum === undefined ? undefined : Number(retryNum),
        retryReason: header(req.headers["x-slack-retry-reason"]),
      };
      return ackedByDeadline(options, delivery);
    },
    respond: (body) => {
      if (body instanceof SlackForm) return body.command ? slashCommandAnswer(body.command) : undefined;
      const envelope = EnvelopeSchema.safeParse(body);
      if (!envelope.success || envelope.data.type !== "url_verification") return undefined;
      const { challenge } = envelope.data;
      if (challenge === undefined) return undefined;
      return { contentType: "application/json", body: JSON.stringify({ challenge }) };
    },
  });
}

// One try of an event's admission; a throw is a transient failure (`retry`), as a refusal to admit is.
function processed(options: EventsRouteOptions, delivery: SlackEnvelope): Promise<InboundResult> {
  return options.process(delivery).catch(
    (error: unknown): InboundResult => ({
      kind: "retry",
      reason: error instanceof Error ? error.message : String(error),
    }),
  );
}

/**
 * The event's admission, or past the deadline an early ack: the delivery is first journaled (on disk before
 * the 200 leaves, so a crash before its admission leaves it to the next start: Slack does not resend it),
 * and finished in the background. A delivery that cannot be journaled is not acknowledged (503: Slack
 * resends it; what is admitted meanwhile makes the resend a duplicate).
 */
function ackedByDeadline(options: EventsRouteOptions, delivery: SlackEnvelope): Promise<InboundResult> {
  let acked = false;
  let key: string | undefined;
  const early = (): InboundResult => {
    try {
      key = options.journal?.record(delivery);
      acked = true;
      return { kind: "accepted" };
    } catch (error) {
      options.logger.error(
        { err: describeError(error), eventId: delivery.body.event_id },
        "slack event could not be journaled before its early ack; not acknowledged, so Slack sends it again",
      );
      return { kind: "retry", reason: "the event could not be journaled" };
    }
  };
  const settle = () => {
    if (key !== undefined) options.journal?.settle(key);
  };
  return withDeadline(
    processed(options, delivery),
    options.ackDeadlineMs ?? ACK_DEADLINE_MS,
    early,
    (late) => {
      // Not acknowledged (it could not be journaled): Slack resends it.
      if (!acked) return;
      // Acknowledged already, so Slack will not resend it: this process tries again (admission is idempotent).
      if (late.kind !== "retry") return settle();
      void admitAfterAck(options, delivery, late.reason).then((admitted) => admitted && settle());
    },
  );
}

/**
 * Admits journaled deliveries (this start's adoption of a dead process's early acks) in the background,
 * with the tries of an acknowledged event, each settled in the journal once over.
 */
export function admitJournaled(
  options: EventsRouteOptions,
  deliveries: Array<{ key: string; delivery: SlackEnvelope }>,
): void {
  for (const { key, delivery } of deliveries) {
    options.logger.info(
      { eventId: delivery.body.event_id },
      "slack event acknowledged by a process that stopped before admitting it; admitting it now",
    );
    void processed(options, delivery)
      .then((result) => result.kind !== "retry" || admitAfterAck(options, delivery, result.reason))
      .then((admitted) => admitted && options.journal?.settle(key));
  }
}

/**
 * Tries an acknowledged event's admission again, with a capped backoff, until it is admitted or refused (a
 * definite outcome: true) or the adapter stops (false: its journal record stays for the next start). A Redis
 * outage longer than any fixed number of tries must not lose what Slack will not resend. Said once when the
 * tries begin and once when they succeed, not at every try; each try keeps the journal from looking orphaned.
 */
async function admitAfterAck(
  options: EventsRouteOptions,
  delivery: SlackEnvelope,
  failure: string,
): Promise<boolean> {
  const { initialMs, maxMs } = options.lateRetry ?? { initialMs: 1000, maxMs: 30_000 };
  const backoff = new Backoff(initialMs, maxMs);
  const eventId = delivery.body.event_id;
  options.logger.warn(
    { eventId, reason: failure },
    "slack event not admitted after its ack; trying again until it is (Slack will not send it again)",
  );
  let reason = failure;
  for (let tries = 1; ; tries++) {
    await sleep(backoff.next(), options.stopped);
    if (options.stopped?.aborted) return false;
    options.journal?.touch();
    const result = await processed(options, delivery);
    if (result.kind !== "retry") {
      // The outcome says whether it was taken (accepted, duplicate) or refused for good (ignored, rejected).
      options.logger.info(
        { eventId, tries, outcome: result.kind, lastFailure: reason },
        "slack event admitted after its ack",
      );
      return true;
    }
    reason = result.reason;
  }
}

/**
 * Waits for `work` (which never rejects: see `processed`) at most `ms`; past it, answers what `early` says
 * (acknowledge now) and reports the late result.
 */
async function withDeadline(
  work: Promise<InboundResult>,
  ms: number,
  early: () => InboundResult,
  onLate: (result: InboundResult) => void,
): Promise<InboundResult> {
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  const deadline = new Promise<InboundResult>((resolve) => {
    timer = setTimeout(() => {
      late = true;
      resolve(early());
    }, ms);
  });
  void work.then((result) => {
    if (late) onLate(result);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
