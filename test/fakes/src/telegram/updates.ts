import type { WebhookInfo } from "grammy/types";
import {
  type Answer,
  arrayParam,
  badRequest,
  boolParam,
  errorAnswer,
  GET_UPDATES_CONFLICT_OTHER,
  GET_UPDATES_CONFLICT_WEBHOOK,
  intParam,
  okAnswer,
  type Params,
  strParam,
} from "./protocol.js";
import { updateId } from "./store.js";
import type { FakeWebhook } from "./types.js";

interface PendingPoll {
  limit: number;
  finish(answer: Answer): void;
}

/**
 * How updates leave the fake: the getUpdates queue with its offset, long-poll
 * and 409 semantics, or the webhook set with setWebhook.
 */
export class UpdateFeed {
  updates: Array<Record<string, unknown>> = [];
  webhook: FakeWebhook | undefined;
  poll: PendingPoll | undefined;

  /** The first `limit` queued updates. */
  take(limit: number): Array<Record<string, unknown>> {
    return this.updates.slice(0, limit);
  }

  /** Queues an update (kept in update_id order) and wakes a pending long poll. */
  push(stored: Record<string, unknown>): void {
    this.updates.push(stored);
    this.updates.sort((a, b) => updateId(a) - updateId(b));
    if (this.poll) this.poll.finish(okAnswer(this.take(this.poll.limit)));
  }

  getUpdates(params: Params, signal: AbortSignal, parked: () => void): Answer | Promise<Answer> {
    if (this.webhook) return errorAnswer({ error_code: 409, description: GET_UPDATES_CONFLICT_WEBHOOK });
    const offset = intParam(params.offset) ?? 0;
    const limit = Math.min(100, Math.max(1, intParam(params.limit) ?? 100));
    const timeout = Math.max(0, intParam(params.timeout) ?? 0);
    // Confirming: a positive offset forgets every update below it; a negative one keeps the last -offset.
    if (offset > 0) this.updates = this.updates.filter((u) => updateId(u) >= offset);
    else if (offset < 0) this.updates = this.updates.slice(offset);
    // Like Telegram, a newer getUpdates kicks out the one still waiting.
    this.poll?.finish(errorAnswer({ error_code: 409, description: GET_UPDATES_CONFLICT_OTHER }));
    const ready = this.take(limit);
    if (ready.length > 0 || timeout === 0) return okAnswer(ready);
    return new Promise<Answer>((resolve) => {
      const pending: PendingPoll = {
        limit,
        finish: (answer) => {
          clearTimeout(timer);
          if (this.poll === pending) this.poll = undefined;
          resolve(answer);
        },
      };
      const timer = setTimeout(() => pending.finish(okAnswer([])), timeout * 1000);
      // The client went away (e.g. grammY's bot.stop() aborts the request): stop waiting.
      signal.addEventListener("abort", () => pending.finish(okAnswer([])), { once: true });
      this.poll = pending;
      parked();
    });
  }

  setWebhook(params: Params): Answer {
    const url = strParam(params.url) ?? "";
    if (boolParam(params.drop_pending_updates)) this.updates = [];
    if (url === "") return this.deleteWebhook();
    try {
      new URL(url);
    } catch {
      return errorAnswer(badRequest("bad this.webhook: invalid URL"));
    }
    const secret = strParam(params.secret_token);
    if (secret !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(secret)) {
      return errorAnswer(badRequest("secret token contains unallowed characters"));
    }
    const next: FakeWebhook = { url };
    if (secret !== undefined) next.secret_token = secret;
    const maxConnections = intParam(params.max_connections);
    if (maxConnections !== undefined) next.max_connections = maxConnections;
    const allowed = arrayParam(params.allowed_updates);
    if (allowed) next.allowed_updates = allowed.map(String);
    this.webhook = next;
    // A long this.poll still waiting learns about the this.webhook the hard way, like on Telegram.
    this.poll?.finish(errorAnswer({ error_code: 409, description: GET_UPDATES_CONFLICT_WEBHOOK }));
    return okAnswer(true, "Webhook was set");
  }

  deleteWebhook(): Answer {
    const had = this.webhook !== undefined;
    this.webhook = undefined;
    return okAnswer(true, had ? "Webhook was deleted" : "Webhook is already deleted");
  }

  getWebhookInfo(): Answer {
    const info: WebhookInfo = {
      url: this.webhook?.url ?? "",
      has_custom_certificate: false,
      pending_update_count: this.updates.length,
    };
    if (this.webhook) {
      info.max_connections = this.webhook.max_connections ?? 40;
      info.ip_address = "127.0.0.1";
      if (this.webhook.allowed_updates)
        info.allowed_updates = this.webhook.allowed_updates as WebhookInfo["allowed_updates"];
    }
    return okAnswer(info);
  }
}
