import { type HubConfig, HubError } from "@hub/core";
import { PairingStore } from "@hub/dispatch";
import type { Command } from "commander";
import { approvePairing } from "../pairing.js";
import { configOf, oneLine, output, replySender, via, withRedis } from "./context.js";

/** `hub pairing list|approve|deny`: straight to Redis (works whether or not the hub runs). */
export function registerPairing(program: Command): void {
  const pairing = program.command("pairing").description("senders waiting for approval (straight to Redis)");
  pairing
    .command("list")
    .description("senders waiting for approval")
    .option("--json", "print JSON")
    .action(async (_opts, command: Command) => {
      const { config } = configOf(command);
      via(`Redis ${config.redis.prefix}:pairing:*`);
      await withRedis(config, async (redis) => {
        const store = new PairingStore(redis, config.redis.prefix);
        const pending = await store.list();
        const turnedAway = await store.turnedAway();
        output(command, { pending, turnedAway }, () => {
          const lines = pending.map(
            (p) =>
              `${p.channel}  ${p.code}  sender ${oneLine(p.senderId)}${p.senderName ? ` (${oneLine(p.senderName)})` : ""}  ${Math.round((Date.now() - p.createdAt) / 60_000)} min ago`,
          );
          if (lines.length === 0) lines.push("No senders are waiting for approval.");
          for (const [account, count] of Object.entries(turnedAway))
            lines.push(
              `${account}: ${count} more senders were told to try later in the last hour (too many waiting).`,
            );
          return lines.join("\n");
        });
      });
    });
  pairing
    .command("approve <channel> <code>")
    .description("let a sender in (they are told)")
    .action(async (channel: string, code: string, _opts, command: Command) =>
      approve(configOf(command).config, channel, code),
    );
  pairing
    .command("deny <channel> <code>")
    .description("drop a request (the sender is not told and stays out)")
    .action(async (channel: string, code: string, _opts, command: Command) => {
      const { config } = configOf(command);
      via(`Redis ${config.redis.prefix}:pairing:*`);
      await withRedis(config, async (redis) => {
        const denied = await new PairingStore(redis, config.redis.prefix).deny(channel, code);
        if (!denied) throw unknownCode(channel, code);
        console.log(`Denied sender ${denied.senderId} on ${channel}.`);
      });
    });
}

/** Lets the sender with `code` in and tells them through the hub's ordered delivery. */
async function approve(config: HubConfig, channel: string, code: string): Promise<void> {
  via(`Redis ${config.redis.prefix}:pairing:*; the notice goes through the hub's delivery`);
  const replies = await replySender(config);
  try {
    await withRedis(config, async (redis) => {
      const store = new PairingStore(redis, config.redis.prefix);
      const approved = await approvePairing(store, replies, channel, code);
      if (!approved) throw unknownCode(channel, code);
      console.log(`Approved sender ${approved.senderId} on ${channel}; they have been told.`);
    });
  } finally {
    await replies.close();
  }
}

function unknownCode(channel: string, code: string): HubError {
  return new HubError(
    "pairing_unknown",
    `No pending pairing with code ${code} on ${channel}; run "hub pairing list" to see the pending ones.`,
  );
}
