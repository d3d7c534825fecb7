import {
  type AdapterStateStore,
  Backoff,
  type ChannelStatusCell,
  type HubLogger,
  type InboundResult,
  retryAfterMs,
  sleep,
} from "@hub/core";
import { type Api, GrammyError } from "grammy";
import { describeTelegramError, isTokenRefused } from "./errors.js";
import { grammySignal } from "./grammy-signal.js";
import { ALLOWED_UPDATES } from "./normalize.js";
import { updateIdOf } from "./update.js";

/** What the long-polling loop needs from its adapter. */
export interface PollerDeps {
  api: Api;
  state: AdapterStateStore;
  /** Where the offset is kept (per account). */
  stateKey: string;
  /** Handles one raw update; never throws (a transient failure is `retry`). */
  handle(raw: unknown): Promise<InboundResult>;
  status: ChannelStatusCell;
  log: HubLogger;
  signal: AbortSignal;
  pollTimeoutSeconds: number;
  conflictBackoffMs: number;
  /**
   * With a connection lease: whether it is surely still ours. Checked right
   * before each getUpdates; the loop ends when it is not (another process polls now).
   */
  leaseValid?: () => boolean;
}

/** The offset after a batch: past every update that is settled, up to the first one to retry. */
interface BatchOutcome {
  offset: number | undefined;
  retry: boolean;
}

/**
 * Handles one batch (chats in parallel, each chat in order) and decides how
 * far the offset moves: past everything that can never be accepted or already
 * was; it stops at the first update whose failure was transient on our side.
 * Updates after that one that were settled are remembered, so the redelivered
 * batch retries only what was not accepted.
 */
async function handleBatch(deps: PollerDeps, batch: unknown[], settled: Set<number>): Promise<BatchOutcome> {
  const ids = batch.map(updateIdOf);
  const results = await Promise.all(
    batch.map((raw, i) => {
      const id = ids[i];
      if (id !== undefined && settled.has(id)) return { kind: "duplicate" } as InboundResult;
      return deps.handle(raw).catch((error): InboundResult => ({ kind: "retry", reason: String(error) }));
    }),
  );
  let offset: number | undefined;
  let retry = false;
  results.forEach((result, i) => {
    const id = ids[i];
    if (id === undefined) return;
    if (result.kind === "retry") {
      if (!retry) offset = id;
      retry = true;
      return;
    }
    settled.add(id);
    if (!retry) offset = Math.max(offset ?? 0, id + 1);
  });
  return { offset, retry };
}

/** How long a batch that ends in an album's item waits for the album's next items, each time. */
const ALBUM_REST_MS = 250;

/**
 * A batch whose last update is an item of an album (photos sent together, one update each, sharing a
 * `media_group_id`) may lack the album's later items: a long poll answers as soon as the first update is
 * there. It is asked for again from the same offset, so nothing is confirmed to Telegram yet, after a moment,
 * while it grows and still ends in an album's item (at most three times): the album is then handled whole
 * (see Albums). A failed ask keeps what was fetched.
 */
async function withWholeAlbums(
  deps: PollerDeps,
  offset: number | undefined,
  batch: unknown[],
): Promise<unknown[]> {
  let whole = batch;
  for (let tries = 0; tries < 3 && endsInAlbumItem(whole); tries++) {
    await sleep(ALBUM_REST_MS, deps.signal);
    if (deps.signal.aborted) break;
    const again = await deps.api
      .getUpdates(
        { ...(offset !== undefined ? { offset } : {}), timeout: 0, allowed_updates: [...ALLOWED_UPDATES] },
        grammySignal(deps.signal),
      )
      .catch(() => undefined);
    if (!Array.isArray(again) || again.length <= whole.length) break;
    whole = again;
  }
  return whole;
}

function endsInAlbumItem(batch: unknown[]): boolean {
  const last = batch.at(-1);
  if (typeof last !== "object" || last === null) return false;
  return Object.values(last).some(
    (value) => typeof value === "object" && value !== null && "media_group_id" in value,
  );
}

/** The polling loops (by their deps) that deleted a webhook already. */
const webhookDeleted = new WeakSet<PollerDeps>();

/** Telegram's 409 while a webhook is set: "Conflict: can't use getUpdates method while webhook is active". */
const WEBHOOK_SET = /webhook is active/i;

/**
 * A webhook left set at Telegram (an earlier `mode: "webhook"` run, another tool) while this account polls:
 * it never goes away by itself, so it is deleted (pending updates kept), as grammY's own `bot.start()` does
 * before polling. False when the delete failed (said; the conflict's wait follows).
 */
async function deleteLeftWebhook(deps: PollerDeps): Promise<boolean> {
  webhookDeleted.add(deps);
  try {
    const { url } = await deps.api.getWebhookInfo(grammySignal(deps.signal));
    await deps.api.deleteWebhook({ drop_pending_updates: false }, grammySignal(deps.signal));
    deps.log.warn(
      { url },
      "a webhook was set for this bot while channels.telegram.mode is polling; deleted it, polling goes on (set mode to webhook to use one; if another installation uses this bot with a webhook, give each its own bot)",
    );
    return true;
  } catch (error) {
    deps.log.warn(
      { err: describeTelegramError(error) },
      "could not delete the webhook left set for this bot",
    );
    return false;
  }
}

/** One getUpdates call; undefined when it failed (logged, status set, waited) or the loop is stopping. */
async function fetchBatch(
  deps: PollerDeps,
  offset: number | undefined,
  backoff: Backoff,
): Promise<unknown[] | "refused" | undefined> {
  try {
    const updates = await deps.api.getUpdates(
      {
        ...(offset !== undefined ? { offset } : {}),
        timeout: deps.pollTimeoutSeconds,
        allowed_updates: [...ALLOWED_UPDATES],
      },
      grammySignal(deps.signal),
    );
    // The Bot API answers a list; anything else (a broken proxy, a self-hosted server) is a failed call.
    if (!Array.isArray(updates))
      throw new Error(
        `getUpdates answered ${updates === null ? "null" : typeof updates} where Telegram answers a list of updates`,
      );
    backoff.reset();
    deps.status.set("connected");
    return updates;
  } catch (error) {
    if (deps.signal.aborted) return undefined;
    if (isTokenRefused(error)) {
      const reason = `Telegram no longer accepts the bot token (${describeTelegramError(error)}); set a valid botToken and restart the hub.`;
      deps.log.error({ reason }, "telegram polling stopped: the bot token was refused");
      deps.status.set("failed", { reason });
      return "refused";
    }
    if (error instanceof GrammyError && error.error_code === 409 && WEBHOOK_SET.test(error.description)) {
      // Once per polling loop: a webhook set again after that is another installation's, not left over.
      if (!webhookDeleted.has(deps) && (await deleteLeftWebhook(deps))) return undefined;
    }
    if (error instanceof GrammyError && error.error_code === 409) {
      // Another poller or a webhook holds the bot; one clear line, then a long wait, not a storm.
      const reason = "Telegram answered Conflict: another process polls this bot or a webhook is set";
      if (deps.status.get().reason !== reason) {
        deps.log.error(
          { description: error.description },
          "Telegram refused polling (409 Conflict): another process is polling this bot or a webhook is set. Stop the other instance, or switch channels.telegram.mode to webhook; polling resumes by itself when the conflict ends.",
        );
      }
      deps.status.set("reconnecting", { reason, nextRetryAt: Date.now() + deps.conflictBackoffMs });
      await sleep(deps.conflictBackoffMs, deps.signal);
      return undefined;
    }
    // A 429 says how long to wait (parameters.retry_after, seconds); never retry sooner.
    const told = error instanceof GrammyError ? retryAfterMs(error.parameters.retry_after, 0) : 0;
    const wait = Math.max(backoff.next(), told);
    const reason = describeTelegramError(error);
    deps.log.warn({ err: reason, backoffMs: wait }, "telegram getUpdates failed; retrying");
    deps.status.set("reconnecting", { reason, nextRetryAt: Date.now() + wait });
    await sleep(wait, deps.signal);
    return undefined;
  }
}

/**
 * Long polling that no payload can jam: the offset moves past every update
 * that can never be accepted, only a transient failure on our side holds it
 * (retried with backoff), and it is stored so a restart neither repeats nor skips.
 */
export async function pollUpdates(deps: PollerDeps): Promise<void> {
  // It ends when asked to (a stop, the lease lost, the token refused); whatever else it throws is said,
  // shown in the status, and polling starts again after a pause: it never ends silently.
  const restarts = new Backoff(1000, 30_000);
  while (!deps.signal.aborted) {
    const startedAt = Date.now();
    try {
      return await pollFromStored(deps);
    } catch (error) {
      if (deps.signal.aborted) return;
      // A failure after a good while of polling is a new one: its wait starts small again.
      if (Date.now() - startedAt > 60_000) restarts.reset();
      const wait = restarts.next();
      const said = describeTelegramError(error);
      deps.log.error({ err: said, backoffMs: wait }, "telegram polling failed; starting it again");
      deps.status.set("reconnecting", {
        reason: `polling failed (${said}); it starts again by itself`,
        nextRetryAt: Date.now() + wait,
      });
      await sleep(wait, deps.signal);
    }
  }
}

async function pollFromStored(deps: PollerDeps): Promise<void> {
  const stored = await deps.state.get(deps.stateKey).catch(() => undefined);
  const offsets = new OffsetWriter(deps);
  try {
    await pollFrom(deps, stored ? Number(stored) : undefined, offsets);
  } finally {
    await offsets.flushed();
  }
}

async function pollFrom(deps: PollerDeps, from: number | undefined, offsets: OffsetWriter): Promise<void> {
  let offset = from;
  const settled = new Set<number>();
  const fetchBackoff = new Backoff(500, 30_000);
  const retryBackoff = new Backoff(500, 30_000);
  while (!deps.signal.aborted) {
    if (deps.leaseValid && !deps.leaseValid()) return;
    const fetched = await fetchBatch(deps, offset, fetchBackoff);
    if (fetched === "refused") return;
    if (!fetched || fetched.length === 0) continue;
    const batch = await withWholeAlbums(deps, offset, fetched);
    const outcome = await handleBatch(deps, batch, settled);
    if (outcome.offset !== undefined && outcome.offset !== offset) {
      offset = outcome.offset;
      for (const id of settled) if (id < offset) settled.delete(id);
      offsets.store(offset);
    }
    if (!outcome.retry && outcome.offset !== undefined) {
      retryBackoff.reset();
      continue;
    }
    // Without a usable update_id in the batch the offset cannot move: wait as for a retry, not spin.
    if (!outcome.retry) {
      const wait = retryBackoff.next();
      deps.log.warn(
        { backoffMs: wait, offset },
        "telegram sent updates without a usable update_id; asking again",
      );
      await sleep(wait, deps.signal);
      continue;
    }
    const wait = retryBackoff.next();
    // A warning, not an error: the hub asked for it (Redis unreachable, or a planned drain); each update's
    // own line says why, and the offset held means Telegram keeps them.
    deps.log.warn({ backoffMs: wait, offset }, "telegram updates could not be accepted now; retrying them");
    await sleep(wait, deps.signal);
  }
}

/**
 * Stores the offset in the background, in order, so the next getUpdates does not wait for it: that
 * getUpdates confirms the batch to Telegram anyway. A store still in flight when the process dies only
 * means a restart asks from an earlier offset: Telegram has forgotten what was confirmed, and what it
 * still has was admitted (dedupe drops the repeat).
 */
class OffsetWriter {
  #last: Promise<void> = Promise.resolve();

  constructor(private readonly deps: PollerDeps) {}

  store(offset: number): void {
    const value = String(offset);
    this.#last = this.#last.then(() =>
      this.deps.state.set(this.deps.stateKey, value).catch((error) => {
        this.deps.log.warn({ err: String(error) }, "telegram polling offset not stored; kept in memory");
      }),
    );
  }

  /** Resolves once every offset handed to `store` is written (or failed and was logged). */
  flushed(): Promise<void> {
    return this.#last;
  }
}
