import { proto } from "@whiskeysockets/baileys";
import { describe, expect, it } from "vitest";
import { normalizeWhatsAppMessage, selfIdentity } from "../src/index.js";
import { directText, groupText } from "./fake-whatsapp.js";

const self = selfIdentity({ id: "15550001111:7@s.whatsapp.net", lid: "99887766:7@lid" });
const options = { accountId: "default" };
const ALICE = "4915112345678@s.whatsapp.net";
const GROUP = "120363041234567890@g.us";
const at = (seconds: number) =>
  proto.WebMessageInfo.fromObject({
    key: { remoteJid: ALICE, id: "T1" },
    message: { conversation: "hi" },
    messageTimestamp: seconds,
  });

describe("normalizeWhatsAppMessage", () => {
  it("knows the bot by its phone JID and its LID, device parts dropped", () => {
    expect([...self.ids].sort()).toEqual(["15550001111@s.whatsapp.net", "99887766@lid"]);
  });

  it("reads a message as plain JSON too (Long timestamps as strings, as a copy shows them)", () => {
    const plain = JSON.parse(JSON.stringify(directText(ALICE, "hi", { timestamp: 1_764_000_000 }).toJSON()));
    const result = normalizeWhatsAppMessage(plain, self, options);
    expect(result).toMatchObject({ ok: true, fields: { body: "hi", timestamp: 1_764_000_000_000 } });
  });

  it("reads protobuf Long timestamps", () => {
    const result = normalizeWhatsAppMessage(at(1_764_000_123), self, options);
    expect(result.ok && result.fields.timestamp).toBe(1_764_000_123_000);
  });

  it("a DM from a LID is direct, from that LID", () => {
    const result = normalizeWhatsAppMessage(directText("208123456789012@lid", "hey"), self, options);
    expect(result).toMatchObject({
      ok: true,
      fields: { chat: { type: "direct", id: "208123456789012@lid" } },
    });
  });

  it.each([
    [
      "a newsletter",
      { key: { remoteJid: "1203630@newsletter", id: "N1" }, message: { conversation: "news" } },
    ],
    [
      "a broadcast list",
      { key: { remoteJid: "1700000@broadcast", id: "B1" }, message: { conversation: "x" } },
    ],
    [
      "a reaction",
      { key: { remoteJid: ALICE, id: "R1" }, message: { reactionMessage: { text: "👍", key: { id: "X" } } } },
    ],
    ["a poll vote", { key: { remoteJid: ALICE, id: "P1" }, message: { pollUpdateMessage: { vote: {} } } }],
    [
      "a protocol message",
      { key: { remoteJid: ALICE, id: "Q1" }, message: { protocolMessage: { type: 0 } } },
    ],
    ["an undecryptable stub", { key: { remoteJid: ALICE, id: "S1" }, messageStubType: 2 }],
    [
      "a view-once without caption",
      {
        key: { remoteJid: ALICE, id: "V0" },
        message: { viewOnceMessageV2: { message: { imageMessage: {} } } },
      },
    ],
  ])("ignores %s", (_name, raw) => {
    const result = normalizeWhatsAppMessage(proto.WebMessageInfo.fromObject(raw), self, options);
    if (_name === "a view-once without caption") {
      // Media without a caption is still a message: the image is its content.
      expect(result).toMatchObject({ ok: true, fields: { body: "", media: [{ kind: "image" }] } });
      return;
    }
    expect(result).toMatchObject({ ok: false, ignored: true });
  });

  it("unwraps a view-once image and keeps its caption", () => {
    const raw = proto.WebMessageInfo.fromObject({
      key: { remoteJid: ALICE, id: "V1" },
      message: {
        viewOnceMessageV2: { message: { imageMessage: { caption: "once", mimetype: "image/png" } } },
      },
      messageTimestamp: 1,
    });
    expect(normalizeWhatsAppMessage(raw, self, options)).toMatchObject({
      ok: true,
      fields: { body: "once", media: [{ kind: "image", mime: "image/png" }] },
    });
  });

  it("a voice note is voice media", () => {
    const raw = proto.WebMessageInfo.fromObject({
      key: { remoteJid: ALICE, id: "A1" },
      message: { audioMessage: { ptt: true, mimetype: "audio/ogg; codecs=opus", seconds: 3 } },
      messageTimestamp: 1,
    });
    expect(normalizeWhatsAppMessage(raw, self, options)).toMatchObject({
      ok: true,
      fields: { media: [{ kind: "voice", mime: "audio/ogg; codecs=opus" }] },
    });
  });

  it("a shared location, a contact card and a tapped button reach the agent as text", () => {
    const bodyOf = (message: Record<string, unknown>) => {
      const raw = proto.WebMessageInfo.fromObject({
        key: { remoteJid: ALICE, id: "S1" },
        message,
        messageTimestamp: 1,
      });
      const result = normalizeWhatsAppMessage(raw, self, options);
      return result.ok ? result.fields.body : `not answered: ${result.reason}`;
    };
    expect(
      bodyOf({
        locationMessage: {
          degreesLatitude: 52.52,
          degreesLongitude: 13.405,
          name: "Cafe",
          address: "Main St 1",
        },
      }),
    ).toBe("[location: Cafe, Main St 1 (52.52, 13.405)]");
    expect(bodyOf({ liveLocationMessage: { degreesLatitude: 1.5, degreesLongitude: 2.5 } })).toBe(
      "[location: (1.5, 2.5)]",
    );
    // A live location says its words; one without a place or both coordinates is still a location.
    expect(bodyOf({ liveLocationMessage: { degreesLatitude: 1.5, caption: "on my way" } })).toBe(
      "[location]\non my way",
    );
    const vcard =
      "BEGIN:VCARD\nVERSION:3.0\nFN:Bob\nTEL;type=CELL;waid=4915100000000:+49 151 00000000\nEND:VCARD";
    expect(bodyOf({ contactMessage: { displayName: "Bob", vcard } })).toBe(
      "[contact: Bob, +49 151 00000000]",
    );
    expect(
      bodyOf({ contactsArrayMessage: { contacts: [{ displayName: "Bob", vcard }, { displayName: "Eve" }] } }),
    ).toBe("[contact: Bob, +49 151 00000000]\n[contact: Eve]");
    expect(
      bodyOf({ buttonsResponseMessage: { selectedButtonId: "b1", selectedDisplayText: "Yes please" } }),
    ).toBe("Yes please");
    expect(
      bodyOf({ listResponseMessage: { title: "Option B", singleSelectReply: { selectedRowId: "r2" } } }),
    ).toBe("Option B");
  });

  it("a location that quotes the bot's message in a group addresses the bot", () => {
    const raw = proto.WebMessageInfo.fromObject({
      key: { remoteJid: GROUP, id: "L1", participant: ALICE },
      message: {
        locationMessage: {
          degreesLatitude: 1,
          degreesLongitude: 2,
          contextInfo: {
            stanzaId: "BOT1",
            participant: "15550001111@s.whatsapp.net",
            quotedMessage: { conversation: "where?" },
          },
        },
      },
      messageTimestamp: 1,
    });
    expect(normalizeWhatsAppMessage(raw, self, options)).toMatchObject({
      ok: true,
      fields: {
        body: "[location: (1, 2)]",
        wasMentioned: true,
        replyTo: { messageId: "BOT1", body: "where?" },
      },
    });
  });

  it("a video note (ptvMessage) is video media", () => {
    const raw = proto.WebMessageInfo.fromObject({
      key: { remoteJid: ALICE, id: "V1" },
      message: { ptvMessage: { mimetype: "video/mp4", seconds: 4, fileLength: 2048 } },
      messageTimestamp: 1,
    });
    expect(normalizeWhatsAppMessage(raw, self, options)).toMatchObject({
      ok: true,
      fields: { media: [{ kind: "video", mime: "video/mp4", size: 2048, ref: `${ALICE}/V1` }] },
    });
  });

  it("a group message needs a participant", () => {
    const raw = groupText(GROUP, "4917687654321@s.whatsapp.net", "x");
    raw.key!.participant = null;
    expect(normalizeWhatsAppMessage(raw, self, options)).toMatchObject({ ok: false, ignored: false });
  });
});
