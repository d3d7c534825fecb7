import { createLogger } from "@hub/core";
import { startFakeOpenAI } from "@hub/fakes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestHub, type TestHub } from "../../../test/support/hub.js";
import { waitFor } from "../../../test/support/redis.js";
import { WhatsAppAdapter } from "../src/index.js";
import { directText, FakeWhatsApp, groupText } from "./fake-whatsapp.js";

const ALICE = "4915112345678@s.whatsapp.net";
const BOB = "4917687654321@s.whatsapp.net";
const GROUP = "120363041234567890@g.us";

describe("whatsapp through the whole hub: a reconnect's replay", () => {
  const wa = new FakeWhatsApp();
  let hub: TestHub;
  let model: Awaited<ReturnType<typeof startFakeOpenAI>>;
  const modelSaw = (text: string) =>
    model.requests.filter((r) => JSON.stringify(r.messages.at(-1)).includes(text)).length;

  beforeAll(async () => {
    model = await startFakeOpenAI();
    const adapter = new WhatsAppAdapter({
      connector: wa,
      logger: createLogger({ level: "silent" }),
      reconnect: { initialMs: 50, maxMs: 200 },
      sendIntervalMs: 0,
      groupSendIntervalMs: 0,
    });
    hub = await startTestHub(
      {
        agent: { model: "fake/m" },
        models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
        channels: {
          whatsapp: {
            dmPolicy: "allowlist",
            allowFrom: [ALICE, BOB],
            groups: { [GROUP]: { requireMention: true } },
          },
        },
      },
      "wa-replay",
      [adapter],
    );
  });
  afterAll(async () => {
    await hub?.dispose();
    await model?.close();
  });

  it("answers what was missed while offline, not what was answered already nor what is too old", async () => {
    model.script({ text: "Answer one." });
    const answered = directText(ALICE, "first question");
    wa.socket.upsert([answered]);
    await waitFor(() => wa.sentTo(ALICE).length === 1, "the first answer");

    // The connection drops; on reconnect WhatsApp replays the backlog as `append`.
    wa.socket.close(428);
    await waitFor(() => wa.sockets.length === 2, "a new socket");
    await waitFor(() => hub.channels()[0]?.status.state === "connected", "connected again");
    model.script({ text: "Answer to the missed one." });
    const twentyMinutesAgo = Math.floor(Date.now() / 1000) - 20 * 60;
    wa.socket.upsert(
      [
        answered,
        directText(ALICE, "a question from long ago", { timestamp: twentyMinutesAgo }),
        groupText(GROUP, BOB, "@15550001111 missed while offline", {
          mentions: ["15550001111@s.whatsapp.net"],
        }),
      ],
      "append",
    );
    await waitFor(() => wa.sentTo(GROUP).length === 1, "the answer to the missed message");
    await new Promise((r) => setTimeout(r, 800));
    expect(wa.sentTo(ALICE).map((m) => m.text)).toEqual(["Answer one."]);
    expect(wa.sentTo(GROUP).map((m) => m.text)).toEqual(["Answer to the missed one."]);
    expect(modelSaw("first question")).toBe(1);
    expect(modelSaw("a question from long ago")).toBe(0);
  }, 30_000);
});
