import { describeError, type HubLogger, type ReplyTarget } from "@hub/core";
import type { WebClient } from "@slack/web-api";

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
  target: ReplyTarget;
  timer: NodeJS.Timeout;
}

const isDirect = (chatId: string) => chatId.startsWith("D");

/**
 * Shows that the bot is working while a run is active, in a DM thread: the assistant thread
 * status (Slack's AI-app "is thinking…"), cleared when the refreshes stop. Elsewhere (and in a
 * workspace where the status is not available) the acknowledgement reaction the hub puts on
 * the user's message shows it (`ackReaction`, `react`).
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
    const key = `${target.chatId}:${target.threadId ?? ""}`;
    const active = this.#active.get(key);
    if (active) {
      active.timer.refresh();
      return;
    }
    if (!(await this.#show(target))) return;
    const timer = setTimeout(() => {
      this.#active.delete(key);
      void this.#clear(target);
    }, this.#o.idleMs);
    timer.unref();
    this.#active.set(key, { target, timer });
  }

  async #show(target: ReplyTarget): Promise<boolean> {
    if (!isDirect(target.chatId) || !target.threadId || this.#statusUnavailable) return false;
    try {
      await this.#o.client.assistant.threads.setStatus({
        channel_id: target.chatId,
        thread_ts: target.threadId,
        status: "is thinking…",
      });
      return true;
    } catch (error) {
      this.#statusUnavailable = true;
      this.#o.logger.info({ err: describeError(error) }, "slack assistant status unavailable");
      return false;
    }
  }

  async #clear(target: ReplyTarget): Promise<void> {
    if (!target.threadId) return;
    try {
      await this.#o.client.assistant.threads.setStatus({
        channel_id: target.chatId,
        thread_ts: target.threadId,
        status: "",
      });
    } catch (error) {
      this.#o.logger.debug({ err: describeError(error) }, "slack working indicator could not be removed");
    }
  }

  /** Removes every indicator now (the adapter stops). */
  async clearAll(): Promise<void> {
    const all = [...this.#active.values()];
    this.#active.clear();
    for (const a of all) clearTimeout(a.timer);
    await Promise.all(all.map((a) => this.#clear(a.target)));
  }
}
