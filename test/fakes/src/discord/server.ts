import { GatewayDispatchEvents } from "discord-api-types/v10";
import { FakeApi, FakeFileHost, startHttpServer } from "../kit/index.js";
import { FakeDiscordGateway } from "./gateway.js";
import {
  buildUserMessage,
  guildCreate,
  messageCreateData,
  type State,
  slashCommand,
  snowflake,
  user,
  userMessage,
} from "./payloads.js";
import { handle } from "./rest.js";
import type { DiscordCall, DiscordFailure, FakeDiscord, FakeDiscordOptions } from "./types.js";

// A local fake of Discord for discord.js (https://discord.com/developers/docs): the REST API under
// `/api/v10` (rest.ts) and the gateway WebSocket at `/gateway` on the same server (gateway.ts), on the
// fake-API kit. Payloads follow discord-api-types v10 (payloads.ts).

/** Starts a fake Discord (REST + gateway) on a free local port. */
export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const o: Required<Omit<FakeDiscordOptions, "ids" | "port">> = {
    token: options.token ?? "fake-discord-token.AAAA.bbbbbbbbbbbbbbbb",
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250,
    messageContentAllowed: options.messageContentAllowed ?? true,
    interactionResponseMs: options.interactionResponseMs ?? 3000,
    hello: options.hello ?? true,
    nonceWindowMs: options.nonceWindowMs ?? 5 * 60_000,
    sessionStartsRemaining: options.sessionStartsRemaining ?? 999,
  };
  const appId = snowflake();
  const bot = user(appId, "hub-test-bot", true);
  const fixed = options.ids ?? {};
  const human = user(fixed.user ?? snowflake(), "ann");
  const ids = {
    guild: fixed.guild ?? snowflake(),
    botRole: snowflake(),
    channel: fixed.channel ?? snowflake(),
    thread: fixed.thread ?? snowflake(),
    dm: fixed.dm ?? snowflake(),
    app: appId,
  };
  let port = 0;
  const gateway = new FakeDiscordGateway(
    {
      token: o.token,
      messageContentAllowed: o.messageContentAllowed,
      heartbeatIntervalMs: o.heartbeatIntervalMs,
      hello: o.hello,
      readyData: () => ({
        user: { ...bot, verified: true, mfa_enabled: false, flags: 0 },
        guilds: [{ id: ids.guild }],
        application: { id: appId, flags: 0 },
      }),
      guildCreates: () => [guildCreate(s)],
    },
    () => `ws://127.0.0.1:${port}/gateway`,
  );
  const s: State = {
    o,
    bot,
    human,
    ids,
    gateway,
    messages: new Map(),
    sent: [],
    edits: new Map(),
    deleted: new Set(),
    reactions: new Map(),
    nonces: new Map(),
    typing: [],
    typingAt: [],
    commands: new Map(),
    interactions: [],
    holds: [],
    files: new FakeFileHost(),
    cdnUrl: () => `http://127.0.0.1:${port}`,
    api: new FakeApi<DiscordCall, DiscordFailure>({ name: "fake discord" }),
  };
  const server = await startHttpServer(
    async (req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (req.method === "GET" && path.startsWith("/attachments/")) return s.files.serve(res, path);
      return handle(s, req, res);
    },
    (res) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "500: Internal Server Error", code: 0 }));
    },
    options.port ?? 0,
    (req, socket, head) => {
      if (new URL(req.url ?? "/", "http://x").pathname === "/gateway") gateway.upgrade(req, socket, head);
      else socket.destroy();
    },
  );
  port = server.port;
  return {
    restApi: `${server.url}/api`,
    token: o.token,
    bot,
    applicationId: appId,
    guildId: ids.guild,
    botRoleId: ids.botRole,
    channelId: ids.channel,
    threadId: ids.thread,
    user: human,
    dmChannelId: ids.dm,
    gateway,
    api: s.api,
    calls: s.api.calls,
    sent: (channelId) => (channelId === undefined ? s.sent : s.sent.filter((m) => m.channelId === channelId)),
    shown: (channelId) =>
      s.sent
        .filter((m) => m.channelId === channelId && !s.deleted.has(m.message.id))
        .map((m) => ({ ...m, edits: s.edits.get(m.message.id) ?? 0 })),
    reactions: (messageId) => s.reactions.get(messageId) ?? [],
    typing: s.typing,
    typingAt: s.typingAt,
    commands: s.commands,
    interactions: s.interactions,
    userMessage: (opts) => userMessage(s, opts),
    messageCreatePayload: (opts) => messageCreateData(s, buildUserMessage(s, opts)),
    redeliver: (message) =>
      s.gateway.dispatch(GatewayDispatchEvents.MessageCreate, messageCreateData(s, message)),
    downloads: s.files.downloads,
    slashCommand: (name, opts) => slashCommand(s, name, opts),
    failNext: (route, failure, times = 1) => s.api.failNext(route, failure, times),
    holdNextResponse: (route) => void s.holds.push(route),
    close: async () => {
      gateway.shutdown();
      await server.close();
    },
  };
}
