import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeOpenAI, type FakeSlack, startFakeOpenAI, startFakeSlack } from "@hub/fakes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  fakeModelEnv,
  freePort,
  type HubProcess,
  startHubProcess,
} from "../../../test/support/hub-process.js";
import { dropPrefix, testPrefix, waitFor } from "../../../test/support/redis.js";
import { messageEvent, SLACK_IDS } from "./harness.js";

// Black box: `hub start` as a child process with a config file and SLACK_* variables, talked to
// only through the fake Slack (signed events in, Web API calls out), killed with SIGKILL mid-post.
describe("slack in a hub process", () => {
  let fake: FakeSlack;
  let model: FakeOpenAI;
  let stateDir: string;
  let env: Record<string, string>;
  const prefix = testPrefix("slack-proc");
  const processes: HubProcess[] = [];

  beforeAll(async () => {
    fake = await startFakeSlack();
    model = await startFakeOpenAI();
    stateDir = mkdtempSync(join(tmpdir(), "hub-slack-"));
    const config = join(stateDir, "hub.json5");
    writeFileSync(
      config,
      JSON.stringify({
        delivery: { leaseMs: 1500 },
        channels: { slack: { apiUrl: fake.apiUrl, dmPolicy: "allowlist", allowFrom: [SLACK_IDS.user] } },
      }),
    );
    env = {
      HUB_CONFIG: config,
      HUB_STATE_DIR: stateDir,
      HUB_REDIS_PREFIX: prefix,
      HUB_GATEWAY_TOKEN: "slack-process-token-0123456789",
      ...fakeModelEnv(model),
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_SIGNING_SECRET: fake.signingSecret,
    };
  });
  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null) await p.kill();
    await fake?.close();
    await model?.close();
    rmSync(stateDir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });

  const start = async (): Promise<HubProcess> => {
    const port = await freePort();
    const hub = await startHubProcess(env, port);
    processes.push(hub);
    fake.eventsUrl = `http://127.0.0.1:${port}/slack/events`;
    // Channels connect in the background; until Slack's is connected its events answer 503 (Slack retries).
    const ready = async () =>
      (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok === true;
    await waitFor(ready, "the Slack channel to connect", 15_000);
    return hub;
  };
  const dm = (text: string) =>
    fake.envelope(messageEvent(fake.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, text)));
  const postedText = (text: string) => fake.posted(SLACK_IDS.directChat).filter((m) => m.text === text);

  it("answers a signed DM; a SIGKILL while chat.postMessage is in flight still leaves one message", async () => {
    const first = await start();
    model.script({ text: "Hello from the process." });
    expect((await fake.deliver(dm("hello"))).status).toBe(200);
    await waitFor(() => postedText("Hello from the process.").length === 1, "the first answer", 15_000);

    // The next post is slow; the hub dies while it is in flight, and Slack completes it anyway.
    model.script({ text: "Survives a crash." });
    fake.slowNext("chat.postMessage", 1500);
    const posts = fake.callsOf("chat.postMessage").length;
    await fake.deliver(dm("crash during the post"));
    await waitFor(() => fake.callsOf("chat.postMessage").length > posts, "the post to reach Slack", 15_000);
    await first.kill();
    await waitFor(() => postedText("Survives a crash.").length === 1, "Slack to complete the post", 5000);

    // The restarted hub takes the segment over, waits for the uncertain post to settle, finds it.
    await start();
    await waitFor(
      () => fake.callsOf("conversations.history").length > 0,
      "the lookup of the uncertain post",
      40_000,
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(postedText("Survives a crash.")).toHaveLength(1);
    expect(fake.callsOf("chat.postMessage").length - posts).toBe(1);
  }, 90_000);
});
