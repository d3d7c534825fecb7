import { type AdapterFields, createLogger, type InboundResult } from "@hub/core";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/redis.js";
import { WhatsAppAdapter, type WhatsAppAdapterOptions } from "../src/index.js";
import {
  BOT,
  directText,
  FakeWhatsApp,
  groupText,
  imageWithCaption,
  stanzaError,
  statusUpdate,
} from "./fake-whatsapp.js";

const ALICE = "4915112345678@s.whatsapp.net";
const BOB = "4917687654321@s.whatsapp.net";
const BOB_LID = "208123456789012@lid";
const GROUP = "120363041234567890@g.us";

let adapters: WhatsAppAdapter[] = [];
afterEach(async () => {
  await Promise.all(adapters.map((a) => a.stop()));
  adapters = [];
});

/** An adapter on a fake WhatsApp, started, recording what it hands the hub. */
async function started(options: Partial<WhatsAppAdapterOptions> = {}, wa = new FakeWhatsApp()) {
  const inbound: AdapterFields[] = [];
  const adapter = new WhatsAppAdapter({
    connector: wa,
    logger: createLogger({ level: "silent" }),
    reconnect: { initialMs: 20, maxMs: 100 },
    linkPollMs: 20,
    ...options,
  });
  adapters.push(adapter);
  await adapter.start(async (fields): Promise<InboundResult> => {
    inbound.push(fields);
    return { kind: "accepted" };
  });
  await waitFor(() => adapter.status().state === "connected", "connected");
  return { adapter, wa, inbound };
}

describe("whatsapp inbound through the socket seam", () => {
  it("a direct message is a direct chat from its sender, addressed to the bot", async () => {
    const { adapter, inbound } = await started();
    const msg = directText(ALICE, "hello there", { pushName: "Alice" });
    expect(await adapter.handleMessage(msg)).toEqual({ kind: "accepted" });
    expect(inbound).toEqual([
      expect.objectContaining({
        channel: "whatsapp",
        accountId: "default",
        messageId: msg.key?.id,
        chat: { type: "direct", id: ALICE },
        sender: { id: ALICE, name: "Alice", isBot: false },
        body: "hello there",
        wasMentioned: true,
        media: [],
      }),
    ]);
    expect(inbound[0]?.replyToMessageId).toBeUndefined();
  });

  it("messages from the socket's messages.upsert reach the hub (ephemeral unwrapped)", async () => {
    const { wa, inbound } = await started();
    wa.socket.upsert([directText(ALICE, "disappearing", { ephemeral: true })]);
    await waitFor(() => inbound.length === 1, "the upserted message");
    expect(inbound[0]?.body).toBe("disappearing");
  });

  it("a group message without a mention is a group message, not addressed to the bot", async () => {
    const { adapter, inbound } = await started();
    const msg = groupText(GROUP, BOB, "the release is on friday");
    await adapter.handleMessage(msg);
    expect(inbound[0]).toMatchObject({
      chat: { type: "group", id: GROUP },
      sender: { id: BOB },
      wasMentioned: false,
      replyToMessageId: `${msg.key?.id}|${BOB}`,
    });
  });

  it("a group @mention of the bot's phone JID or of its LID is addressed to it", async () => {
    const { adapter, inbound } = await started();
    await adapter.handleMessage(groupText(GROUP, BOB, "@15550001111 when?", { mentions: [BOT.pn] }));
    // LID addressing: the participant is a LID (its phone JID beside it) and the mention is the bot's LID.
    await adapter.handleMessage(
      groupText(GROUP, BOB_LID, "@99887766 and you?", { mentions: [BOT.lid], participantAlt: BOB }),
    );
    await adapter.handleMessage(groupText(GROUP, BOB, "@someone else", { mentions: [ALICE] }));
    expect(inbound.map((f) => f.wasMentioned)).toEqual([true, true, false]);
    expect(inbound[1]?.sender.id).toBe(BOB);
  });

  it("a quoted reply to the bot is addressed to it and carries the quoted message", async () => {
    const { adapter, inbound } = await started();
    await adapter.handleMessage(
      groupText(GROUP, BOB, "are you sure?", {
        quoted: { id: "BOT000001", participant: "15550001111:7@s.whatsapp.net", text: "It is friday." },
      }),
    );
    expect(inbound[0]).toMatchObject({
      wasMentioned: true,
      replyTo: { messageId: "BOT000001", senderId: BOT.pn, body: "It is friday." },
    });
  });

  it("an image with a caption is the caption plus a media reference", async () => {
    const { adapter, inbound } = await started();
    const msg = imageWithCaption(ALICE, "look at this");
    await adapter.handleMessage(msg);
    expect(inbound[0]).toMatchObject({
      body: "look at this",
      media: [{ kind: "image", mime: "image/jpeg", size: 52_431, ref: `${ALICE}/${msg.key?.id}` }],
    });
  });

  it("downloads the media of a recent message by its reference", async () => {
    const { adapter, inbound } = await started();
    const msg = imageWithCaption(ALICE, "the invoice");
    await adapter.handleMessage(msg);
    const media = inbound[0]?.media?.[0];
    if (!media) throw new Error("no media");
    const fetched = await adapter.fetchMedia({ ...media, size: undefined }, { maxBytes: 1000 });
    expect(String(await bytesOf(fetched.body))).toBe(`image bytes of ${msg.key?.id}`);
    // Over the cap: refused before the download (declared size) and during it (counted bytes).
    await expect(adapter.fetchMedia(media, { maxBytes: 1000 })).rejects.toThrow(/larger than 1000 bytes/);
    const small = await adapter.fetchMedia({ ...media, size: undefined }, { maxBytes: 10 });
    await expect(bytesOf(small.body)).rejects.toThrow(/larger than 10 bytes/);
    await expect(
      adapter.fetchMedia({ ...media, ref: `${ALICE}/UNKNOWN` }, { maxBytes: 100_000 }),
    ).rejects.toThrow(/not available to download in this process/);
  });

  it("ignores status broadcasts, its own messages, and messages older than the configured age", async () => {
    const { adapter, inbound } = await started({ maxMessageAgeMs: 60_000 });
    const old = Math.floor(Date.now() / 1000) - 120;
    const results = [
      await adapter.handleMessage(statusUpdate(ALICE, "my status")),
      await adapter.handleMessage(directText(ALICE, "sent from my phone", { fromMe: true })),
      await adapter.handleMessage(directText(ALICE, "from two minutes ago", { timestamp: old })),
    ];
    expect(results.map((r) => r.kind)).toEqual(["ignored", "ignored", "ignored"]);
    expect(inbound).toEqual([]);
  });

  it("rejects what is not a WebMessageInfo without throwing", async () => {
    const { adapter, inbound } = await started();
    for (const raw of [null, "text", { key: null }, { key: { remoteJid: 7, id: "x" } }, { key: {} }])
      expect((await adapter.handleMessage(raw)).kind).toBe("rejected");
    expect(inbound).toEqual([]);
  });
});

describe("whatsapp connection lifecycle", () => {
  it("close 428 reconnects with a new socket", async () => {
    const { adapter, wa } = await started();
    wa.socket.close(428);
    await waitFor(() => wa.sockets.length === 2, "a second socket");
    await waitFor(() => adapter.status().state === "connected", "connected again");
    expect(adapter.opened).toBe(2);
  });

  it("recoverable closes back off (capped) instead of reconnecting in a tight loop", async () => {
    const wa = new FakeWhatsApp();
    const { adapter } = await started({ reconnect: { initialMs: 100, maxMs: 200 } }, wa);
    wa.autoOpen = false;
    wa.socket.close(408);
    await waitFor(() => adapter.status().state === "reconnecting", "reconnecting");
    expect(adapter.status()).toMatchObject({ reason: expect.stringContaining("408") });
    const started2 = Date.now();
    for (let i = 0; i < 4; i++) {
      await waitFor(() => wa.sockets.length === 2 + i, `socket ${2 + i}`);
      wa.socket.close(500);
    }
    // Four attempts waited at least 80 + 160 + 160 + 160 ms (jitter ±20%): never a tight loop.
    expect(Date.now() - started2).toBeGreaterThanOrEqual(400);
  });

  it("401 logged out: stops, forgets the credentials, reports a new login is needed, never reconnects", async () => {
    const { adapter, wa } = await started();
    wa.socket.close(401);
    await waitFor(() => adapter.status().state === "logged_out", "logged out");
    expect(adapter.status().reason).toMatch(/hub channels login whatsapp/);
    expect(wa.forgotten).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(wa.sockets.length).toBe(1);
    expect(adapter.status().state).toBe("logged_out");
  });

  it("a new link after a logout connects again by itself", async () => {
    const { adapter, wa } = await started();
    wa.socket.close(401);
    await waitFor(() => adapter.status().state === "logged_out", "logged out");
    wa.linked = true;
    await waitFor(() => adapter.status().state === "connected", "connected after linking");
    expect(wa.sockets.length).toBe(2);
  });

  it("440 conflict: reports that another session replaced it and stops, no loop", async () => {
    const { adapter, wa } = await started();
    wa.socket.close(440);
    await waitFor(() => adapter.status().state === "failed", "failed");
    expect(adapter.status().reason).toMatch(/replaced/);
    await new Promise((r) => setTimeout(r, 300));
    expect(wa.sockets.length).toBe(1);
    expect(wa.forgotten).toBe(0);
  });

  it("515 restart required reconnects at once", async () => {
    const { adapter, wa } = await started({ reconnect: { initialMs: 5000, maxMs: 5000 } });
    wa.socket.close(515);
    await waitFor(() => wa.sockets.length === 2, "a second socket", 1000);
    await waitFor(() => adapter.status().state === "connected", "connected");
  });

  it("a stop while a socket is being opened ends that socket and returns", async () => {
    const { adapter, wa } = await started();
    wa.openDelayMs = 200;
    wa.socket.close(428);
    await waitFor(() => adapter.status().state === "reconnecting", "reconnecting");
    await new Promise((r) => setTimeout(r, 100));
    await adapter.stop();
    await waitFor(() => wa.sockets.length === 2, "the socket that was being opened");
    expect(wa.sockets[1]?.ended).toBe(true);
    expect(adapter.status().state).toBe("stopped");
  });

  it("without a linked device, start resolves and the status says how to link", async () => {
    const wa = new FakeWhatsApp();
    wa.linked = false;
    const adapter = new WhatsAppAdapter({
      connector: wa,
      logger: createLogger({ level: "silent" }),
      linkPollMs: 20,
    });
    adapters.push(adapter);
    await adapter.start(async () => ({ kind: "accepted" }));
    expect(adapter.status()).toMatchObject({ state: "logged_out", reason: expect.stringMatching(/login/) });
    expect(wa.sockets.length).toBe(0);
  });

  it("an unreachable WhatsApp is reconnecting with the reason and the next try", async () => {
    const wa = new FakeWhatsApp();
    wa.openError = new Error("getaddrinfo ENOTFOUND web.whatsapp.com");
    const adapter = new WhatsAppAdapter({
      connector: wa,
      logger: createLogger({ level: "silent" }),
      reconnect: { initialMs: 50, maxMs: 100 },
    });
    adapters.push(adapter);
    await adapter.start(async () => ({ kind: "accepted" }));
    expect(adapter.status()).toMatchObject({
      state: "reconnecting",
      reason: expect.stringContaining("ENOTFOUND"),
      nextRetryAt: expect.any(Number),
    });
    wa.openError = undefined;
    await waitFor(() => adapter.status().state === "connected", "connected once reachable");
  });
});

describe("whatsapp outbound", () => {
  const seg = (text: string, index = 0, last = true) => ({ replyId: "r1", index, text, last });

  it("renders markdown, quotes the triggering message on a group answer's first segment only", async () => {
    const { adapter, wa } = await started();
    const msg = groupText(GROUP, BOB, "@bot when?", { mentions: [BOT.pn] });
    await adapter.handleMessage(msg);
    const target = {
      channel: "whatsapp",
      accountId: "default",
      chatId: GROUP,
      replyToMessageId: `${msg.key?.id}|${BOB}`,
    };
    await adapter.send(seg("**Friday**, _maybe_ ~~thursday~~", 0, false), target);
    await adapter.send(seg("```\ncode\n```", 1), target);
    const [first, second] = wa.sentTo(GROUP);
    expect(first?.text).toBe("*Friday*, _maybe_ ~thursday~");
    expect(first?.quoted?.key).toMatchObject({ id: msg.key?.id, participant: BOB, remoteJid: GROUP });
    expect(second?.text).toBe("```\ncode\n```");
    expect(second?.quoted).toBeUndefined();
  });

  it("a segment sent again (after a crash or a timeout) carries the same message id: the chat shows it once", async () => {
    const { adapter, wa } = await started();
    const target = { channel: "whatsapp", accountId: "default", chatId: ALICE };
    const first = await adapter.send(seg("part one", 0, false), target);
    const again = await adapter.send(seg("part one", 0, false), target);
    await adapter.send(seg("part two", 1), target);
    await adapter.send({ replyId: "r2", index: 0, text: "part one", last: true }, target);
    expect(first.messageId).toMatch(/^3EB0[0-9A-F]{18}$/);
    expect(again.messageId).toBe(first.messageId);
    expect(wa.resent).toEqual([first.messageId]);
    const ids = wa.sentTo(ALICE).map((m) => m.id);
    expect(wa.sentTo(ALICE).map((m) => m.text)).toEqual(["part one", "part two", "part one"]);
    expect(new Set(ids).size).toBe(3);
  });

  it("quotes by key when the triggering message is no longer remembered (after a restart)", async () => {
    const { adapter, wa } = await started();
    await adapter.send(seg("hi"), {
      channel: "whatsapp",
      accountId: "default",
      chatId: GROUP,
      replyToMessageId: `OLDID|${BOB}`,
    });
    expect(wa.sentTo(GROUP)[0]?.quoted?.key).toMatchObject({ id: "OLDID", participant: BOB });
  });

  it("shows composing while the run is active and paused after the last segment", async () => {
    const { adapter, wa } = await started();
    const target = { channel: "whatsapp", accountId: "default", chatId: ALICE };
    await adapter.sendTyping(target);
    await adapter.send(seg("done"), target);
    await waitFor(() => wa.socket.presence.length === 2, "paused");
    expect(wa.socket.presence).toEqual([
      { type: "composing", jid: ALICE },
      { type: "paused", jid: ALICE },
    ]);
  });

  it("pauses by itself when typing is no longer refreshed", async () => {
    const { adapter, wa } = await started({ pauseAfterMs: 50 });
    await adapter.sendTyping({ channel: "whatsapp", accountId: "default", chatId: ALICE });
    await waitFor(() => wa.socket.presence.at(-1)?.type === "paused", "paused after the refreshes stop");
  });

  it("paces groups slower than direct chats", async () => {
    const { adapter } = await started({ sendIntervalMs: 1000, groupSendIntervalMs: 3000 });
    expect(adapter.sendIntervalMs({ channel: "whatsapp", accountId: "default", chatId: GROUP })).toBe(3000);
    expect(adapter.sendIntervalMs({ channel: "whatsapp", accountId: "default", chatId: ALICE })).toBe(1000);
  });

  it("a send while disconnected fails (retried by delivery) and a refused one fails for good", async () => {
    const { adapter, wa } = await started();
    const target = { channel: "whatsapp", accountId: "default", chatId: ALICE };
    wa.socket.failNext(stanzaError(403, "forbidden"));
    await expect(adapter.send(seg("x"), target)).rejects.toMatchObject({ name: "PermanentSendError" });
    wa.socket.failNext(stanzaError(429, "rate-overlimit"));
    await expect(adapter.send(seg("x"), target)).rejects.toMatchObject({ name: "RateLimitedError" });
    wa.socket.failNext(stanzaError(500, "internal-server-error"));
    await expect(adapter.send(seg("x"), target)).rejects.toThrow("internal-server-error");
    wa.autoOpen = false;
    wa.socket.close(428);
    await waitFor(() => adapter.status().state !== "connected", "disconnected");
    await expect(adapter.send(seg("x"), target)).rejects.toThrow(/not connected/);
  });
});

async function bytesOf(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}
