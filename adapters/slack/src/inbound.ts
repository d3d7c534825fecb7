import {
  describeError,
  formatIssues,
  type HubLogger,
  type InboundHandler,
  type InboundResult,
  InboundSequencer,
  identifyingFields,
  isUrgentCommand,
  KeyedChain,
} from "@hub/core";
import type { App } from "@slack/bolt";
import { z } from "zod";
import type { SlackDirectory } from "./directory.js";
import type { SlackEnvelope } from "./events-http.js";
import {
  normalizeSlackEvent,
  type SlackBotIdentity,
  type SlackMessageEvent,
  SlackMessageEventSchema,
} from "./normalize.js";
import { otherWorkspace } from "./workspace.js";

/** The event types the hub answers; any other event is acknowledged and ignored without Bolt. */
const HANDLED = new Set(["message", "app_mention"]);

const Fields = z.record(z.string(), z.unknown());
const NullableId = z.string().nullable().optional();

/**
 * Every envelope field Bolt reads, typed, before Bolt sees the envelope (it throws on odd shapes:
 * a null authorization, an `item` that is not an object). Unknown fields pass.
 */
const EventCallbackSchema = z.looseObject({
  type: z.literal("event_callback"),
  team_id: NullableId,
  enterprise_id: NullableId,
  is_enterprise_install: z.boolean().optional(),
  is_ext_shared_channel: z.boolean().optional(),
  authorizations: z
    .array(
      z.looseObject({
        team_id: NullableId,
        enterprise_id: NullableId,
        user_id: NullableId,
        is_enterprise_install: z.boolean().optional(),
      }),
    )
    .optional(),
  event: SlackMessageEventSchema.extend({
    channel_id: z.string().optional(),
    item: Fields.optional(),
    assistant_thread: Fields.optional(),
    previous_message: Fields.optional(),
    subteam: Fields.optional(),
  }),
});

/** Where a listener leaves the hub's answer for the envelope it handled (Bolt's `customProperties`). */
interface ResultSlot {
  result?: InboundResult;
}
const SLOT = "hubInboundResult";

/** What inbound processing needs from the adapter. */
export interface SlackInboundOptions {
  app: App;
  logger: HubLogger;
  directory: SlackDirectory;
  accountId: string;
  editedMessages: "ignore" | "as-new";
  identity: () => SlackBotIdentity | undefined;
  isBotThread: (channel: string, threadTs: string) => boolean;
}

/**
 * Slack events -> the hub: an envelope goes through Bolt (whose middleware drops the bot's own
 * messages) to the `message` and `app_mention` listeners, which normalize and admit it. Messages
 * of one chat/thread are admitted in order (the core's sequencer), so the `app_mention` and
 * `message` Slack sends for one mention are admitted one after the other: one run, one duplicate.
 */
export class SlackInbound {
  readonly #o: SlackInboundOptions;
  readonly #sequencer = new InboundSequencer();
  readonly #arrivals = new KeyedChain();
  readonly #inflight = new Set<Promise<unknown>>();
  #handler: InboundHandler | undefined;

  constructor(options: SlackInboundOptions) {
    this.#o = options;
    const listener = async ({ event, context }: { event: unknown; context: Record<string, unknown> }) => {
      const slot = context[SLOT] as ResultSlot | undefined;
      const result = await this.#onEvent(event);
      if (slot) slot.result = result;
    };
    options.app.event("app_mention", listener);
    options.app.event("message", listener);
  }

  /** Starts (a handler) or stops (undefined) admitting. */
  setHandler(handler: InboundHandler | undefined): void {
    this.#handler = handler;
  }

  /** Resolves when every admission in progress has finished. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inflight]);
  }

  /**
   * Processes one verified envelope. Only `retry` (a transient failure on our side) makes Slack
   * redeliver; an envelope that Bolt or we cannot read is logged and `rejected`, never retried forever.
   */
  async process(envelope: SlackEnvelope): Promise<InboundResult> {
    const log = this.#o.logger;
    const eventId = envelope.body.event_id;
    if (envelope.retryNum) {
      log.info(
        { retryNum: envelope.retryNum, retryReason: envelope.retryReason, eventId },
        "slack redelivered an event",
      );
    }
    if (!this.#handler) return { kind: "retry", reason: "the Slack adapter is not started" };
    const type = (envelope.body.event as { type?: unknown } | undefined)?.type;
    if (envelope.body.type === "event_callback" && typeof type === "string" && !HANDLED.has(type)) {
      return { kind: "ignored", reason: `a ${type} event` };
    }
    const readable = EventCallbackSchema.safeParse(envelope.body);
    if (!readable.success) {
      const reason = formatIssues(readable.error.issues.slice(0, 3));
      log.warn(
        { eventId, ...identifyingFields(envelope.body.event, { ts: "ts", channel: "chatId" }), reason },
        "slack event does not match Slack's event shape; dropped",
      );
      return { kind: "rejected", reason: `unreadable event (${reason})` };
    }
    const bot = this.#o.identity();
    const elsewhere = bot ? otherWorkspace(readable.data, bot) : undefined;
    if (elsewhere) {
      log.info({ eventId, teamId: readable.data.team_id }, "slack event for another workspace; ignored");
      return { kind: "ignored", reason: elsewhere };
    }
    const slot: ResultSlot = {};
    try {
      await this.#o.app.processEvent({
        body: envelope.body,
        ack: async () => {},
        customProperties: { [SLOT]: slot },
        ...(envelope.retryNum !== undefined ? { retryNum: envelope.retryNum } : {}),
        ...(envelope.retryReason !== undefined ? { retryReason: envelope.retryReason } : {}),
      });
    } catch (error) {
      log.warn({ eventId, err: describeError(error) }, "slack event could not be processed; dropped");
      return { kind: "rejected", reason: describeError(error) };
    }
    return slot.result ?? { kind: "ignored", reason: "not a message for the hub" };
  }

  async #onEvent(raw: unknown): Promise<InboundResult> {
    const parsed = SlackMessageEventSchema.safeParse(raw);
    if (!parsed.success) return { kind: "rejected", reason: "not a Slack message event" };
    const work = this.#admit(parsed.data);
    this.#inflight.add(work);
    try {
      return await work;
    } finally {
      this.#inflight.delete(work);
    }
  }

  async #admit(event: SlackMessageEvent): Promise<InboundResult> {
    const identity = this.#o.identity();
    const handler = this.#handler;
    if (!identity || !handler) return { kind: "retry", reason: "the Slack adapter is not started" };
    // The names are looked up at once (up to a second each, side by side), and each message is handed to
    // the sequencer in the order its chat's events arrived: a slow lookup let a later message overtake an
    // earlier one. `/stop` waits for nothing.
    const lookup = event.user ? this.#o.directory.names(event.user, event.channel) : Promise.resolve({});
    const handOff = async (): Promise<Submitted> => {
      const normalized = normalizeSlackEvent(
        event,
        identity,
        {
          accountId: this.#o.accountId,
          editedMessages: this.#o.editedMessages,
          isBotThread: this.#o.isBotThread,
        },
        await lookup,
      );
      return "skip" in normalized
        ? { skip: normalized.skip }
        : { admitted: this.#sequencer.submit(normalized.fields, handler) };
    };
    const urgent = isUrgentCommand((event.text ?? "").replace(LEADING_MENTIONS, ""));
    const submitted = await (urgent
      ? handOff()
      : this.#arrivals.run(`${event.channel}/${event.thread_ts ?? ""}`, handOff));
    if ("skip" in submitted) {
      this.#o.logger.debug({ ts: event.ts, reason: submitted.skip }, "slack event not for us");
      return { kind: "ignored", reason: submitted.skip };
    }
    const result = await submitted.admitted.catch(
      (error: unknown): InboundResult => ({ kind: "retry", reason: describeError(error) }),
    );
    if (result.kind === "rejected") {
      this.#o.logger.warn({ ts: event.ts, reason: result.reason }, "slack message rejected");
    }
    return result;
  }
}

/** A Slack event after its lookup: not a message for the hub, or handed to the sequencer (its admission). */
type Submitted = { skip: string } | { admitted: Promise<InboundResult> };

// `<@U123> /stop` in a channel is a `/stop` too.
const LEADING_MENTIONS = /^(\s*<@[A-Z0-9]+>\s*)+/;
