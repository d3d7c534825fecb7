import { FailedDeliveries } from "@hub/reply";
import type { Command } from "commander";
import { retrySendable } from "../sendable.js";
import { configOf, indentLines, output, replySender, via, withRedis } from "./context.js";

/** `hub deliveries failed|retry`: the segments delivery gave up on, straight from Redis. */
export function registerDeliveries(program: Command): void {
  const deliveries = program
    .command("deliveries")
    .description("reply segments delivery gave up on (straight to Redis)");
  deliveries
    .command("failed")
    .description("list them, newest first")
    .option("--json", "print JSON")
    .action(async (_opts, command: Command) => {
      const { config } = configOf(command);
      via(`Redis ${config.redis.prefix}:deliveries:failed`);
      await withRedis(config, async (redis) => {
        const failed = await new FailedDeliveries(redis, config.redis.prefix).list();
        output(command, failed, () =>
          failed.length === 0
            ? "No failed deliveries."
            : failed
                .map(
                  (f) =>
                    `${f.id}  ${new Date(f.at).toISOString()}  ${f.target.channel}/${f.target.accountId} ${f.target.chatId}  ${f.kind === "expired" ? "EXPIRED " : ""}${f.error}\n    ${indentLines(f.text.length > 120 ? `${f.text.slice(0, 120)}…` : f.text, "      ")}`,
                )
                .join("\n"),
        );
      });
    });
  deliveries
    .command("retry [ids...]")
    .description("send them again (the ones named by id, or all) through ordered delivery")
    .action(async (ids: string[], _opts, command: Command) => {
      const { config } = configOf(command);
      via(`Redis ${config.redis.prefix}:deliveries:failed, into the hub's ordered delivery`);
      const replies = await replySender(config);
      try {
        await withRedis(config, async (redis) => {
          const failed = new FailedDeliveries(redis, config.redis.prefix);
          const { retried, skipped } = await retrySendable(
            failed,
            replies,
            config,
            ids.length > 0 ? ids : undefined,
          );
          for (const s of skipped) console.error(`Not retried: ${s.id}: ${s.reason}`);
          // A script that retries must see that some were not (a typo'd id, a channel not configured).
          if (skipped.length > 0) process.exitCode = 1;
          console.log(
            retried.length
              ? `Queued ${retried.length} segment(s) again: ${retried.map((r) => r.id).join(", ")}.`
              : 'Nothing to retry; "hub deliveries failed" lists the failed ones.',
          );
        });
      } finally {
        await replies.close();
      }
    });
}
