import { describeError, type HubLogger, type ReplyTarget } from "@hub/core";
import type { WebClient } from "@slack/web-api";

/** The reaction put on the user's message while a run works on it. */
export const WORKING_REACTION = "eyes";

/** What the indicator needs. */
export interface WorkingIndicatorOptions {
  client: WebClient;
  logger: HubLogger;
  /**
   * The indicator is removed once no refresh came for this long. The agent refreshes typing
   * every ~4.5 s while a run is active and stops whatever way the run ends (done, failed,
   * stopped), so silence means the run is over.
   */
  idleMs: number;
}

interface Active {
  kind: "status" | "reaction";
  target: ReplyTarget;
  timer: NodeJS.Timeout;
}

const isDirect = (chatId: string) => chatId.startsWith("D");

/**
 * Shows that the bot is working while a run is active: the assistant thread status in a DM
 * thread (Slack's AI-app "is thinking…"), otherwise a reaction on the user's message; removed
 * when the refreshes stop. A workspace where the status is not available falls back to the
 * reaction from then on.
 */
export class WorkingIndicator {
  readonly #o: WorkingIndicatorOptions;
  readonly #active = new Map<string, Active>();
  #statusUnavailable = false;

  constructor(options: WorkingIndicatorOptions) {
    this.#o = options;
  }

  /** Starts (or keeps alive) the indicator of a reply target. */
  async refresh(target: ReplyTarget): Promise<void> {
    const key = `${target.chatId}:${target.threadId ?? ""}:${target.replyToMessageId ?? ""}`;
    const active = this.#active.get(key);
    if (active) {
      active.timer.refresh();
      return;
    }
    const kind = await this.#show(target);
    if (!kind) return;
    const timer = setTimeout(() => {
      this.#active.delete(key);
      void this.#clear(target, kind);
    }, this.#o.idleMs);
    timer.unref();
    this.#active.set(key, { kind, target, timer });
  }

  async #show(target: ReplyTarget): Promise<Active["kind"] | undefined> {
    const client = this.#o.client;
    if (isDirect(target.chatId) && target.threadId && !this.#statusUnavailable) {
      try {
        await client.assistant.threads.setStatus({
          channel_id: target.chatId,
          thread_ts: target.threadId,
          status: "is thinking…",
        });
        return "status";
      } catch (error) {
        this.#statusUnavailable = true;
        this.#o.logger.info(
          { err: describeError(error) },
          "slack assistant status unavailable; using a reaction",
        );
      }
    }
    if (!target.replyToMessageId) return undefined;
    try {
      await client.reactions.add({
        channel: target.chatId,
        timestamp: target.replyToMessageId,
        name: WORKING_REACTION,
      });
    } catch (error) {
      // Someone already reacted the same way: it shows the same thing, and is not ours to remove.
      if (describeError(error).includes("already_reacted")) return undefined;
      throw error;
    }
    return "reaction";
  }

  async #clear(target: ReplyTarget, kind: Active["kind"]): Promise<void> {
    const client = this.#o.client;
    try {
      if (kind === "status" && target.threadId) {
        await client.assistant.threads.setStatus({
          channel_id: target.chatId,
          thread_ts: target.threadId,
          status: "",
        });
      } else if (target.replyToMessageId) {
        await client.reactions.remove({
          channel: target.chatId,
          timestamp: target.replyToMessageId,
          name: WORKING_REACTION,
        });
      }
    } catch (error) {
      this.#o.logger.debug({ err: describeError(error) }, "slack working indicator could not be removed");
    }
  }

  /** Removes every indicator now (the adapter stops). */
  async clearAll(): Promise<void> {
    const all = [...this.#active.values()];
    this.#active.clear();
    for (const a of all) clearTimeout(a.timer);
    await Promise.all(all.map((a) => this.#clear(a.target, a.kind)));
  }
}
