import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type FakeOpenAI,
  type FakeTelegram,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { GatewayClient } from "../support/gateway-client.js";
import { fakeModelEnv } from "../support/hub-process.js";
import { INSTALLATION_TOKEN, type Installation, installation } from "../support/installation.js";
import { monitorRedis } from "../support/monitor.js";
import { waitFor } from "../support/redis.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";

// A run's end is a chat event for the web clients watching its session. With no web client connected to any
// gateway, nobody hears it: it is not published (a Redis command and a message to every gateway process per
// message, for a hub that talks to Telegram only). Once a client connects, its gateway says so, and a
// Telegram session's runs are heard again by a client watching that session: in one thread, and with the
// runs on an agent thread (which hears it as another process would, through Redis).
let model: FakeOpenAI;
let telegram: FakeTelegram;
const installs: Installation[] = [];
beforeAll(async () => {
  model = await startFakeOpenAI();
  telegram = await startFakeTelegram();
});
afterEach(async () => {
  for (const i of installs.splice(0)) await i.dispose();
});
afterAll(async () => {
  await telegram.close();
  await model.close();
});

// Until every thread of the hub (started, so listening) is sure nobody listens: 2 s after its question, or a
// heartbeat and a second (6 s) where its subscriber connection came up again meanwhile (a loaded machine).
const SURE_AFTER_MS = 6500;

describe.each([
  ["", 0],
  [", the runs on an agent thread", 1],
])("chat events with no web client connected%s", (_, threads) => {
  it("are not published; a client that connects and watches a Telegram session hears its next run end", async () => {
    const user = 7171 + threads;
    const inst = installation(`chat-listeners-${threads}`, {
      env: fakeModelEnv(model),
      config: {
        agent: { threads },
        channels: {
          telegram: fakeTelegramChannel(telegram, [user]),
        },
      },
    });
    installs.push(inst);
    const { hub, client, port } = await inst.start();
    const startedAt = Date.now();
    client!.close();
    const monitor = await monitorRedis();
    const published: string[] = [];
    monitor.on("monitor", (_time, [command, channel, message]) => {
      if (command?.toLowerCase() === "publish" && channel === `${inst.prefix}:chat-events`)
        published.push(message ?? "");
    });
    try {
      await new Promise((r) => setTimeout(r, Math.max(0, startedAt + SURE_AFTER_MS - Date.now())));
      const answered = (text: string) => telegram.sent(user).some((m) => String(m.text).includes(text));
      model.script({ text: "unheard answer" });
      telegram.pushUpdate(privateText({ chatId: user, fromId: user, text: "nobody watches" }));
      await waitFor(() => answered("unheard answer"), "the first answer at Telegram", 20_000);
      // The run's end would be published right after this line (logged on its thread, which writes it).
      await hub.waitForOutput(/"msg":"run finished"/);
      await new Promise((r) => setTimeout(r, 500));
      expect(published).toEqual([]);

      // A client connects and watches the Telegram session (its history): the next run's end reaches it.
      const watcher = await GatewayClient.open(port, INSTALLATION_TOKEN);
      const sessionKey = `agent:main:telegram:direct:${user}`;
      try {
        expect((await watcher.request("chat.history", { sessionKey })).ok).toBe(true);
        model.script({ text: "heard answer" });
        telegram.pushUpdate(privateText({ chatId: user, fromId: user, text: "someone watches" }));
        const end = await watcher.waitFor(
          (f) => f.type === "event" && f.payload.sessionKey === sessionKey && f.payload.state === "final",
          "the run's end at the watching client",
          20_000,
        );
        expect(end).toMatchObject({ payload: { text: "heard answer" } });
        expect(published.length).toBeGreaterThan(0);
      } finally {
        watcher.close();
      }
    } finally {
      monitor.disconnect();
    }
  }, 60_000);
});
