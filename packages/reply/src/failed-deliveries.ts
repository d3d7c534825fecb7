import { randomUUID } from "node:crypto";
import {
  describeError,
  type OutboxFile,
  OutboxFileSchema,
  type ReplySink,
  type ReplyTarget,
  ReplyTargetSchema,
} from "@hub/core";
import type { Redis } from "ioredis";
import { z } from "zod";

/** How many given-up segments are kept for the operator (the oldest are dropped). */
const KEEP = 1000;

const FailedDeliverySchema = z.object({
  id: z.string(),
  replyId: z.string(),
  index: z.number().int(),
  text: z.string(),
  target: ReplyTargetSchema,
  error: z.string(),
  at: z.number(),
  /** `expired`: not sent because it was older than `delivery.maxAge` when its turn came. */
  kind: z.enum(["failed", "expired"]).optional(),
  /** A file segment's file (its bytes stay in the outbox until swept). */
  attachment: OutboxFileSchema.optional(),
});
/** One reply segment delivery gave up on, kept so the operator can see and retry it. */
export type FailedDelivery = z.infer<typeof FailedDeliverySchema>;

/**
 * The failed-delivery list (`<prefix>:deliveries:failed`, newest first): the
 * reply dispatcher records each segment it gives up on; `hub deliveries failed`
 * lists them and `hub deliveries retry` sends them again through ordered delivery.
 */
export class FailedDeliveries {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  get #key(): string {
    return `${this.prefix}:deliveries:failed`;
  }

  /** Records a segment given up for good. */
  async record(
    segment: {
      replyId: string;
      index: number;
      text: string;
      target: ReplyTarget;
      attachment?: OutboxFile | undefined;
    },
    error: unknown,
    kind: "failed" | "expired" = "failed",
  ): Promise<void> {
    const entry: FailedDelivery = {
      id: randomUUID().slice(0, 8),
      replyId: segment.replyId,
      index: segment.index,
      text: segment.text,
      target: segment.target,
      ...(segment.attachment ? { attachment: segment.attachment } : {}),
      error: describeError(error),
      at: Date.now(),
      kind,
    };
    await this.redis
      .multi()
      .lpush(this.#key, JSON.stringify(entry))
      .ltrim(this.#key, 0, KEEP - 1)
      .exec();
  }

  /** How many failed segments are kept. */
  count(): Promise<number> {
    return this.redis.llen(this.#key);
  }

  /** The failed segments, newest first. */
  async list(): Promise<FailedDelivery[]> {
    const raw = await this.redis.lrange(this.#key, 0, -1);
    return raw.flatMap((r) => {
      const parsed = FailedDeliverySchema.safeParse(JSON.parse(r));
      return parsed.success ? [parsed.data] : [];
    });
  }

  /**
   * Sends failed segments again (those whose id is in `ids`, or all) as new replies
   * to their targets, and removes them from the list; returns the ones retried.
   */
  async retry(replies: ReplySink, ids?: ReadonlyArray<string>): Promise<FailedDelivery[]> {
    const raw = await this.redis.lrange(this.#key, 0, -1);
    const retried: FailedDelivery[] = [];
    for (const r of raw.reverse()) {
      const parsed = FailedDeliverySchema.safeParse(JSON.parse(r));
      if (!parsed.success || (ids && !ids.includes(parsed.data.id))) continue;
      // Removed first: two operators retrying at once send it once.
      if ((await this.redis.lrem(this.#key, 1, r)) === 0) continue;
      const reply = replies.open(`retry-${parsed.data.id}-${randomUUID()}`, parsed.data.target);
      const { text, attachment } = parsed.data;
      if (attachment && reply.pushFile) await reply.pushFile(attachment, text);
      else await reply.push(text);
      await reply.end();
      retried.push(parsed.data);
    }
    return retried;
  }
}
