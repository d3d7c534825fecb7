import { describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/redis.js";
import { type LoginSocket, linkDevice, pairingPhone } from "../src/index.js";
import { FakeWhatsApp, FakeWhatsAppSocket } from "./fake-whatsapp.js";

/** A fresh device's socket: it shows QR codes and can ask for a pairing code. */
class LoginFake extends FakeWhatsAppSocket implements LoginSocket {
  readonly pairingRequests: string[] = [];
  async requestPairingCode(phone: string): Promise<string> {
    this.pairingRequests.push(phone);
    return "ABCD1234";
  }
}

function world() {
  const wa = new FakeWhatsApp();
  const sockets: LoginFake[] = [];
  const lines: string[] = [];
  const open = async () => {
    const socket = new LoginFake(wa, sockets.length);
    sockets.push(socket);
    return socket;
  };
  return { sockets, lines, open, print: (text: string) => void lines.push(text) };
}

const QR = "2@k1VvLzQF0x9vW1b2E3n4T5m6Y7u8I9o0P,bXlOb2lzZUtleQ==,aWRlbnRpdHlLZXk=,YWR2U2VjcmV0";

describe("hub channels login whatsapp (linking a device)", () => {
  it("shows the QR code in the terminal and waits until the phone links", async () => {
    const w = world();
    const linking = linkDevice({ open: w.open, print: w.print });
    await waitFor(() => w.sockets.length === 1, "a socket");
    w.sockets[0]?.ev.emit("connection.update", { qr: QR });
    await waitFor(() => w.lines.some((l) => l.includes("Linked devices")), "the QR code");
    const qr = w.lines.find((l) => l.split("\n").length > 10);
    expect(qr).toMatch(/[█▀▄]/);
    w.sockets[0]?.ev.emit("connection.update", { connection: "open" });
    await expect(linking).resolves.toEqual({ name: "15550001111:7@s.whatsapp.net" });
    expect(w.lines[0]).toBe("Connecting to WhatsApp…");
    expect(w.lines.at(-1)).toMatch(/^Linked as 15550001111:7@s\.whatsapp\.net/);
    expect(w.sockets[0]?.ended).toBe(true);
  });

  it("with --phone asks once for a pairing code, and reopens after WhatsApp's restart (515)", async () => {
    const w = world();
    const linking = linkDevice({ open: w.open, print: w.print, phone: "+49 151 1234-5678" });
    await waitFor(() => w.sockets.length === 1, "a socket");
    w.sockets[0]?.ev.emit("connection.update", { qr: QR });
    w.sockets[0]?.ev.emit("connection.update", { qr: QR });
    await waitFor(() => w.lines.some((l) => l.startsWith("Pairing code")), "the pairing code");
    expect(w.lines).toContain("Pairing code: ABCD-1234");
    expect(w.sockets[0]?.pairingRequests).toEqual(["4915112345678"]);
    w.sockets[0]?.close(515);
    await waitFor(() => w.sockets.length === 2, "the reopened socket");
    w.sockets[1]?.ev.emit("connection.update", { connection: "open" });
    await linking;
    expect(w.sockets[1]?.pairingRequests).toEqual([]);
    expect(w.lines.some((l) => /QR|█/.test(l))).toBe(false);
  });

  it("expired codes (408) end the login with a clear error, without retrying", async () => {
    const w = world();
    const linking = linkDevice({ open: w.open, print: w.print });
    await waitFor(() => w.sockets.length === 1, "a socket");
    w.sockets[0]?.ev.emit("connection.update", { qr: QR });
    w.sockets[0]?.close(408);
    await expect(linking).rejects.toThrow(/codes expired.*hub channels login whatsapp/);
    expect(w.sockets).toHaveLength(1);
  });

  it("an unreachable WhatsApp (408 before any code) is retried a few times, then a clear error", async () => {
    const w = world();
    const linking = linkDevice({ open: w.open, print: w.print, maxConnections: 3, retryDelayMs: 0 });
    for (let i = 0; i < 3; i++) {
      await waitFor(() => w.sockets.length === i + 1, `socket ${i + 1}`);
      w.sockets[i]?.close(408);
    }
    await expect(linking).rejects.toThrow(/could not be reached/);
    expect(w.sockets).toHaveLength(3);
  });

  it("gives up after its time limit", async () => {
    const w = world();
    await expect(
      linkDevice({ open: w.open, print: w.print, timeoutMs: 100, maxConnections: 1 }),
    ).rejects.toThrow(/not linked/);
  });

  it("takes a phone number with its country code only", () => {
    expect(pairingPhone("+1 (555) 000-1111")).toBe("15550001111");
    expect(() => pairingPhone("call me")).toThrow(/country code/);
  });
});
