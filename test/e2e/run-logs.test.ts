import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type FakeOpenAI,
  type FakeTelegram,
  privateText,
  startFakeOpenAI,
  startFakeTelegram,
} from "../fakes/src/index.js";
import { fakeModelEnv } from "../support/hub-process.js";
import { type Installation, installation } from "../support/installation.js";
import { waitFor } from "../support/redis.js";

// Issue 17: every log line of a run carries runId, sessionKey and channel, from admission to delivery.
const USER = 6262;
let model: FakeOpenAI;
let telegram: FakeTelegram;
let inst: Installation;
beforeAll(async () => {
  [model, telegram] = await Promise.all([startFakeOpenAI(), startFakeTelegram()]);
  inst = installation("run-logs", {
    config: {
      channels: {
        telegram: {
          botToken: telegram.token,
          apiRoot: telegram.apiRoot,
          dmPolicy: "allowlist",
          allowFrom: [String(USER)],
        },
      },
    },
    env: {
      ...fakeModelEnv(model),
      HUB_LOG_LEVEL: "debug",
    },
  });
});
afterAll(async () => {
  await inst.dispose();
  await Promise.all([model.close(), telegram.close()]);
});

type Line = Record<string, unknown>;

describe("run logs", () => {
  it("every line that names a run (admission, the agent, delivery) carries its runId, sessionKey and channel", async () => {
    const { hub } = await inst.start();
    // The first send fails, so delivery logs about the run too (a retry), not only admission and the agent.
    telegram.failNext("sendMessage", { error_code: 500, description: "Internal Server Error" });
    telegram.pushUpdate(privateText({ chatId: USER, fromId: USER, text: "tell me something" }));
    await waitFor(() => telegram.sent(USER).length >= 1, "the answer", 20_000);
    await hub.stop();
    const lines = hub.output
      .join("")
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Line);
    const ofRun = lines.filter((l) => typeof l.runId === "string");
    const runIds = new Set(ofRun.map((l) => l.runId));
    expect(runIds.size).toBe(1);
    const [runId] = runIds;
    const sessionKey = ofRun.find((l) => typeof l.sessionKey === "string")?.sessionKey;
    expect(sessionKey).toMatch(/telegram/);
    // The run is logged by each stage: admission, the agent, and delivery (the failed first send).
    const messages = ofRun.map((l) => l.msg);
    expect(messages).toEqual(
      expect.arrayContaining([
        "inbound message accepted",
        "run started",
        "item failed; retrying the key later",
      ]),
    );
    for (const line of ofRun) {
      expect(line, JSON.stringify(line)).toMatchObject({ runId, sessionKey, channel: "telegram" });
    }
    // A line about this session outside a run would be a line a run's reader cannot find by runId.
    const ofSession = lines.filter((l) => l.sessionKey === sessionKey);
    expect(ofSession.filter((l) => l.runId === undefined)).toEqual([]);
  }, 90_000);
});
