// A whole hub process (`hub start`, run by apps/hub/src/main.ts as `npm start` runs it) whose WhatsApp
// accounts connect to a fake linked device (for the hub-level journal test): only the connection is fake
// (WhatsAppConnector, through the plugin's `useWhatsAppConnector` seam); config, Redis, admission, runs,
// delivery and the adapter with its journal are the hub's own.
// The test drives the fake over HTTP on loopback, at the port printed as `fake-whatsapp control <port>`:
// POST /upsert `{ messages: [a WebMessageInfo's protobuf JSON], type?: "notify" | "append" }` delivers
// them on the open socket (409 while none is open). Every send WhatsApp takes is printed as
// `fake-whatsapp sent <json>`: the output is what the test reads, and it survives a SIGKILL.
import { createServer } from "node:http";
import { proto } from "@whiskeysockets/baileys";
import { useWhatsAppConnector } from "../src/plugin.js";
import { FakeWhatsApp } from "./fake-whatsapp.js";

const wa = new FakeWhatsApp();
wa.onSend = (m, resent) =>
  console.log(`fake-whatsapp sent ${JSON.stringify({ jid: m.jid, id: m.id, text: m.text, resent })}`);
useWhatsAppConnector(() => wa);

const control = createServer((req, res) => {
  let body = "";
  req.on("data", (d: Buffer) => {
    body += d.toString();
  });
  req.on("end", () => {
    const socket = wa.sockets.at(-1);
    if (req.method !== "POST" || req.url !== "/upsert") return void res.writeHead(404).end();
    if (!socket || socket.ended) return void res.writeHead(409).end("no open socket");
    const { messages, type } = JSON.parse(body) as { messages: unknown[]; type?: "notify" | "append" };
    socket.upsert(
      messages.map((m) => proto.WebMessageInfo.fromObject(m as Record<string, unknown>)),
      type ?? "notify",
    );
    res.writeHead(204).end();
  });
});
control.listen(0, "127.0.0.1", () => {
  const { port } = control.address() as { port: number };
  console.log(`fake-whatsapp control ${port}`);
});
control.unref();

await import("../../../apps/hub/src/main.js");
