import type { AdapterStateStore, OutboundSegment, SendResult } from "@hub/core";
import { type REST, Routes } from "discord.js";

/** What answering one interaction needs: its token (valid 15 minutes) and the application. */
export interface InteractionRecord {
  token: string;
  appId: string;
  /** When it was deferred (epoch ms). */
  at: number;
}

/** How long an interaction token can be used to answer (Discord: 15 minutes), with a margin. */
const INTERACTION_TTL_MS = 15 * 60 * 1000 - 30_000;
const NO_PINGS = { parse: [] as string[] };

/**
 * Slash command answers: the interaction is deferred (type 5) at once, its token
 * kept in the adapter state store so whichever process delivers the reply can
 * answer it: the first segment edits the deferred reply, later ones follow up.
 */
export class InteractionReplies {
  readonly #known = new Map<string, InteractionRecord>();

  constructor(
    private readonly rest: () => REST,
    private readonly state: AdapterStateStore,
    private readonly accountId: string,
  ) {}

  #key(id: string): string {
    return `discord:${this.accountId}:interaction:${id}`;
  }

  /** Defers the interaction (Discord shows "thinking…") and keeps its token; throws when Discord refuses. */
  async defer(i: { id: string; token: string; application_id: string }): Promise<InteractionRecord> {
    await this.rest().post(Routes.interactionCallback(i.id, i.token), { body: { type: 5 }, auth: false });
    const record = { token: i.token, appId: i.application_id, at: Date.now() };
    this.#known.set(i.id, record);
    await this.state.set(this.#key(i.id), JSON.stringify(record)).catch(() => {});
    return record;
  }

  /** The record of an interaction that can still be answered. */
  async find(id: string): Promise<InteractionRecord | undefined> {
    const stored =
      this.#known.get(id) ??
      (JSON.parse((await this.state.get(this.#key(id))) ?? "null") as InteractionRecord | null);
    if (!stored || Date.now() - stored.at > INTERACTION_TTL_MS) return undefined;
    return stored;
  }

  /** Replaces the deferred reply's content. */
  async editOriginal(record: InteractionRecord, content: string, signal?: AbortSignal): Promise<SendResult> {
    const edited = (await this.rest().patch(Routes.webhookMessage(record.appId, record.token, "@original"), {
      body: { content, allowed_mentions: NO_PINGS },
      auth: false,
      ...(signal ? { signal } : {}),
    })) as { id?: string };
    return edited.id ? { messageId: edited.id } : {};
  }

  /** Sends one segment of the reply to interaction `id`; undefined when it expired (post in the channel). */
  async send(segment: OutboundSegment, id: string, signal?: AbortSignal): Promise<SendResult | undefined> {
    const record = await this.find(id);
    if (!record) return undefined;
    if (segment.index === 0) return this.editOriginal(record, segment.text, signal);
    const sent = (await this.rest().post(Routes.webhook(record.appId, record.token), {
      body: { content: segment.text, allowed_mentions: NO_PINGS },
      auth: false,
      ...(signal ? { signal } : {}),
    })) as { id?: string };
    return sent.id ? { messageId: sent.id } : {};
  }

  /** Puts `text` in the deferred reply unless something (a refusal notice) already answered it. */
  async answerIfUnanswered(record: InteractionRecord, text: string): Promise<void> {
    const original = (await this.rest()
      .get(Routes.webhookMessage(record.appId, record.token, "@original"), { auth: false })
      .catch(() => undefined)) as { content?: string } | undefined;
    if (original && !original.content) await this.editOriginal(record, text).catch(() => {});
  }
}
