import type { HubLogger } from "@hub/core";
import type { Client } from "discord.js";
import { DiscordMessageSchema } from "./normalize.js";
import { CommandInteractionSchema } from "./slash-commands.js";

type Packet = { t?: unknown; d?: unknown } | undefined;
type PacketHandler = (packet: Packet, shard: unknown) => boolean;

/** Dispatches whose shape the adapter checks before discord.js builds its objects from them. */
const CHECKED: Record<string, (d: unknown) => boolean> = {
  MESSAGE_CREATE: (d) => DiscordMessageSchema.safeParse(d).success,
  INTERACTION_CREATE: (d) =>
    typeof d === "object" && d !== null && (d as { type?: unknown }).type !== 2
      ? typeof (d as { id?: unknown }).id === "string"
      : CommandInteractionSchema.safeParse(d).success,
};

/**
 * discord.js's packet handlers throw on a malformed dispatch (`Cannot use 'in'
 * operator...`), inside an async listener: an unhandled rejection, which ends
 * a Node process. This wraps the client's packet handler so a malformed
 * MESSAGE_CREATE or INTERACTION_CREATE never reaches discord.js (the adapter
 * reads those from the raw event, validated) and any other handler's throw is
 * logged and dropped. `handlePacket` is discord.js's own (marked private) entry
 * for every dispatch, including queued ones.
 */
export function guardPacketHandlers(client: Client, log: HubLogger): void {
  const manager = client.ws as unknown as { handlePacket: PacketHandler };
  const original: PacketHandler = manager.handlePacket.bind(manager);
  manager.handlePacket = (packet, shard) => {
    const type = typeof packet?.t === "string" ? packet.t : undefined;
    const check = type ? CHECKED[type] : undefined;
    if (packet && check && !check(packet.d)) {
      // The adapter's raw handler already logged it (a message) or has no use for it (an interaction).
      log.debug({ event: type }, "malformed Discord dispatch kept from discord.js");
      return true;
    }
    try {
      return original(packet, shard);
    } catch (error) {
      log.warn({ event: type }, "discord.js could not handle a Discord dispatch; dropped");
      log.debug(
        { event: type, err: error instanceof Error ? error.message : String(error) },
        "why discord.js failed",
      );
      return true;
    }
  };
}
