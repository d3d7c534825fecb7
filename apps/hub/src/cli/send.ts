import { randomUUID } from "node:crypto";
import { HubError } from "@hub/core";
import type { Command } from "commander";
import { checkSendable } from "../sendable.js";
import { configOf, replySender, timeoutSeconds } from "./context.js";

/**
 * `hub send <channel> <target> <text>`: queues a message through ordered
 * delivery in Redis; the running hub's delivery role sends it. Waits (with
 * progress on stderr) until it is delivered or `--timeout` passes.
 */
export function registerSend(program: Command): void {
  program
    .command("send <channel> <target> <text...>")
    .description(
      "send a message to a chat (target = the platform's chat id) through the hub's ordered delivery in Redis",
    )
    .option("--account <id>", "the channel account", "default")
    .option("--thread <id>", "a thread or topic in the chat")
    .option("--timeout <seconds>", "how long to wait for delivery", "30")
    .action(
      async (
        channel: string,
        target: string,
        words: string[],
        opts: { account: string; thread?: string; timeout: string },
        command: Command,
      ) => {
        // Checked before anything is queued: a bad value must not report a failure for a message it sent.
        const timeoutS = timeoutSeconds(opts.timeout, "; nothing was sent");
        const { config } = configOf(command);
        checkSendable(config, channel, opts.account);
        const text = words.join(" ");
        const replies = await replySender(config);
        const replyId = `cli-${randomUUID()}`;
        try {
          const reply = replies.open(replyId, {
            channel,
            accountId: opts.account,
            chatId: target,
            ...(opts.thread ? { threadId: opts.thread } : {}),
          });
          await reply.push(text);
          await reply.end();
          console.error(`Queued in Redis (${config.redis.prefix}); waiting for the hub to deliver it…`);
          const progress = setInterval(() => console.error("  still waiting for delivery…"), 5000);
          let timer: NodeJS.Timeout | undefined;
          const settled = await Promise.race([
            replies.settled(replyId),
            new Promise<undefined>((r) => {
              timer = setTimeout(() => r(undefined), timeoutS * 1000);
            }),
          ]).finally(() => {
            clearTimeout(timer);
            clearInterval(progress);
          });
          if (!settled)
            throw new HubError(
              "send_pending",
              `Not delivered within ${timeoutS} s; it stays queued. Is the hub running with the delivery role and the ${channel} channel connected? See "hub status".`,
            );
          if (settled.failed > 0)
            throw new HubError(
              "send_failed",
              `Delivery to ${channel} ${target} failed; see "hub deliveries failed".`,
            );
          console.log(`Delivered to ${channel} ${target}.`);
        } finally {
          await replies.close();
        }
      },
    );
}
