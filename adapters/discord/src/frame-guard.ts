import { createRequire } from "node:module";
import type * as DiscordWs from "@discordjs/ws";
import { z } from "zod";

// The CommonJS copy discord.js itself loads, resolved from discord.js (the ESM entry, or another version
// pinned here, would be a copy no client uses).
const fromDiscordJs = createRequire(createRequire(import.meta.url).resolve("discord.js"));
const { WebSocketShard, WebSocketShardDestroyRecovery } = fromDiscordJs("@discordjs/ws") as typeof DiscordWs;

/** Starts every line the guard says through a shard's debug channel (see `frameProblemOf`). */
const MARK = "hub frame guard: ";

/** Discord's usual heartbeat interval, used in place of one no client could beat at. */
const USUAL_HEARTBEAT_MS = 41_250;

// A number of ms a client can beat at: at most 10 minutes (a timer past 2^31 ms fires at once).
const HeartbeatSchema = z.number().finite().min(100).max(600_000);
const HelloSchema = z.looseObject({ heartbeat_interval: HeartbeatSchema });
const ReadySchema = z.looseObject({
  session_id: z.string().min(1),
  user: z.looseObject({ id: z.string().min(1) }),
  guilds: z.array(z.unknown()),
});
// Where the session resumes: a URL a WebSocket can open (else the resume would throw where nothing catches it).
const ResumeUrlSchema = z.string().regex(/^wss?:\/\/[^\s]+$/);

type Frame = { op?: unknown; t?: unknown; d?: unknown } | null;
// What the guard uses of a shard: its debug channel (private in the typings) and its destroy.
interface Shard {
  debug(messages: string[]): void;
  destroy(options: DiscordWs.WebSocketShardDestroyOptions): Promise<void>;
}
type Unpack = (this: Shard, data: unknown, isBinary: boolean) => Promise<Frame>;

/**
 * What the guard changed or dropped, from a discord.js debug line (the client's `debug` event carries what
 * a shard says); undefined for any other line.
 */
export function frameProblemOf(debugLine: string): string | undefined {
  const at = debugLine.indexOf(MARK);
  return at < 0 ? undefined : debugLine.slice(at + MARK.length);
}

let installed = false;

/**
 * Checks the gateway frames @discordjs/ws reads fields of without a check, before it reads them. Its
 * listeners are async: a HELLO with `d: null` or a READY without `guilds` threw an unhandled rejection,
 * which ends the Node process (the whole hub, every channel); a READY without `user` left discord.js
 * without its bot user (every message then dropped while the channel showed connected); a HELLO interval
 * of 0, 1 or 1e12 ms made it beat, and resume as a zombie, in a tight loop. A HELLO whose interval no
 * client could keep gets Discord's usual 41,250 ms; a READY without its session, user or guild list is
 * dropped and the bot identifies again; an INVALID_SESSION without its boolean is not resumable; a
 * resume_gateway_url no WebSocket can open is dropped (the session resumes at the gateway's URL).
 * Installed once per process, on the class every client's shards are.
 */
export function guardGatewayFrames(): void {
  if (installed) return;
  installed = true;
  const proto = WebSocketShard.prototype as unknown as { unpackMessage: Unpack };
  const unpack = proto.unpackMessage;
  proto.unpackMessage = async function (this: Shard, data, isBinary) {
    return checked(this, await unpack.call(this, data, isBinary));
  };
}

function checked(shard: Shard, frame: Frame): Frame {
  if (typeof frame !== "object" || frame === null) return frame;
  if (frame.op === 10 && !HelloSchema.safeParse(frame.d).success) {
    const d = typeof frame.d === "object" && frame.d !== null ? frame.d : {};
    const given = (d as { heartbeat_interval?: unknown }).heartbeat_interval;
    shard.debug([
      `${MARK}Discord's HELLO gave heartbeat_interval ${JSON.stringify(given) ?? "none"}, which no client can beat at; beating every ${USUAL_HEARTBEAT_MS} ms`,
    ]);
    return { ...frame, d: { ...d, heartbeat_interval: USUAL_HEARTBEAT_MS } };
  }
  // INVALID_SESSION's d says whether the session can be resumed; without one (read with toString) it cannot.
  if (frame.op === 9 && typeof frame.d !== "boolean") {
    shard.debug([
      `${MARK}Discord's INVALID_SESSION gave d ${JSON.stringify(frame.d) ?? "none"}; identifying again`,
    ]);
    return { ...frame, d: false };
  }
  if (frame.op === 0 && frame.t === "READY") {
    const ready = ReadySchema.safeParse(frame.d);
    if (ready.success) return withResumeUrl(shard, frame, ready.data);
    const missing = ready.error.issues.map((issue) => issue.path.join(".") || "its data").join(", ");
    shard.debug([`${MARK}Discord's READY lacked ${missing}; dropped it and identifying again`]);
    void shard
      .destroy({
        reason: "READY without its session, user or guilds",
        recover: WebSocketShardDestroyRecovery.Reconnect,
      })
      .catch(() => {});
    return null;
  }
  return frame;
}

// A READY whose resume_gateway_url no WebSocket can open loses it: the session resumes at the gateway's URL.
function withResumeUrl(shard: Shard, frame: Frame & object, d: Record<string, unknown>): Frame {
  const url = d.resume_gateway_url;
  if (url === undefined || ResumeUrlSchema.safeParse(url).success) return frame;
  shard.debug([
    `${MARK}Discord's READY gave resume_gateway_url ${JSON.stringify(url)}; resuming at the gateway's URL`,
  ]);
  const { resume_gateway_url: _dropped, ...rest } = d;
  return { ...frame, d: rest };
}
