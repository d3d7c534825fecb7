import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@hub/core";
import { startFakeOpenAI } from "@hub/fakes";
import { afterAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../../test/support/gateway-client.js";
import { startTestHub } from "../../../test/support/hub.js";
import { waitFor } from "../../../test/support/redis.js";
import { publishLinkCode, readLinkCode, WhatsAppAdapter } from "../src/index.js";
import { FakeWhatsApp } from "./fake-whatsapp.js";

const QR = "2@k1VvLzQF0x9vW1b2E3n4T5m6Y7u8I9o0P,bXlOb2lzZUtleQ==,aWRlbnRpdHlLZXk=,YWR2U2VjcmV0";
const dir = mkdtempSync(join(tmpdir(), "wa-link-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the link code of a login in progress", () => {
  it("is published beside the credentials, read back as a QR image, stale after 70 s, cleared at the end", async () => {
    await publishLinkCode(dir, { qr: QR });
    const code = await readLinkCode(dir);
    expect(code?.qrImage).toMatch(/^data:image\/png;base64,[A-Za-z0-9+/]{200,}/);
    expect(await readLinkCode(dir, Date.now() + 80_000)).toBeUndefined();
    await publishLinkCode(dir, { pairingCode: "ABCD1234" });
    expect(await readLinkCode(dir)).toMatchObject({ pairingCode: "ABCD1234" });
    await publishLinkCode(dir, undefined);
    expect(await readLinkCode(dir)).toBeUndefined();
  });

  it("reaches the owner's channels.status while unlinked, and no other gateway client", async () => {
    const wa = new FakeWhatsApp();
    wa.linked = false;
    const adapter = new WhatsAppAdapter({
      connector: wa,
      logger: createLogger({ level: "silent" }),
      linkPollMs: 20,
      pendingLink: () => readLinkCode(dir),
    });
    const model = await startFakeOpenAI();
    const hub = await startTestHub(
      {
        gateway: { clients: [{ name: "viewer", token: "viewer-token-0123456789", scopes: ["read"] }] },
        agent: { model: "fake/m" },
        models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
        channels: { whatsapp: { allowFrom: ["1@s.whatsapp.net"] } },
      },
      "wa-link",
      [adapter],
    );
    try {
      await publishLinkCode(dir, { qr: QR });
      await waitFor(() => adapter.status().link?.qrImage !== undefined, "the code in the status");
      const statusOf = async (token: string) => {
        const client = await GatewayClient.open(hub.port, token);
        const res = await client.request("channels.status");
        client.close();
        const { channels } = (
          res as { payload: { channels: Array<{ channel: string; status: Record<string, unknown> }> } }
        ).payload;
        return channels.find((c) => c.channel === "whatsapp")?.status;
      };
      expect(await statusOf(hub.token)).toMatchObject({
        state: "logged_out",
        link: { qrImage: expect.stringMatching(/^data:image\/png;base64,/) },
      });
      const viewer = await statusOf("viewer-token-0123456789");
      expect(viewer).toMatchObject({ state: "logged_out" });
      expect(viewer?.link).toBeUndefined();
      // Linked: the code goes away.
      await publishLinkCode(dir, undefined);
      wa.linked = true;
      await waitFor(() => adapter.status().state === "connected", "connected");
      expect(adapter.status().link).toBeUndefined();
    } finally {
      await hub.dispose();
      await model.close();
    }
  }, 30_000);
});
