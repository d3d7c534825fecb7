import { type FakeOpenAI, type FakeSlack, startFakeOpenAI, startFakeSlack } from "@hub/fakes";
import { afterEach, describe, expect, it } from "vitest";
import { messageEvent, SLACK_IDS } from "../../adapters/slack/test/harness.js";
import { fakeModelEnv } from "../support/hub-process.js";
import { type Installation, installation } from "../support/installation.js";
import { waitFor } from "../support/redis.js";

// The acknowledgement reaction (Slack's :eyes:) comes off once the answer is delivered, by the process
// that ran the answer; one killed after its run ended left it on for good (a black-box run found it).
let model: FakeOpenAI;
let slack: FakeSlack;
let inst: Installation | undefined;
afterEach(async () => {
  await inst?.dispose();
  await slack?.close();
  await model?.close();
});

describe("a hub killed after its run ended, before the reaction came off", () => {
  it("removes the reaction after the restart, once the answer is out; the answer is posted once", async () => {
    model = await startFakeOpenAI();
    slack = await startFakeSlack();
    inst = installation("crash-reaction", {
      env: fakeModelEnv(model),
      config: {
        channels: {
          slack: {
            botToken: slack.botToken,
            signingSecret: slack.signingSecret,
            apiUrl: slack.apiUrl,
            dmPolicy: "allowlist",
            allowFrom: [SLACK_IDS.user],
          },
        },
      },
    });
    model.script({ text: "The answer." });
    const a = await inst.start({ failpoints: "run.after-settle=kill@1" });
    slack.eventsUrl = `http://127.0.0.1:${a.port}/slack/events`;
    const msg = slack.userMessage(SLACK_IDS.directChat, SLACK_IDS.user, "what is up?");
    await slack.deliver(slack.envelope(messageEvent(msg)));
    await a.hub.waitForOutput(/failpoint run\.after-settle: kill/);
    await a.hub.exited;
    // Put on while it worked, never taken off: the process died between the run's end and the removal.
    expect(slack.reactionsOn(SLACK_IDS.directChat, msg.ts)).toEqual(["eyes"]);
    const b = await inst.start();
    slack.eventsUrl = `http://127.0.0.1:${b.port}/slack/events`;
    await waitFor(
      () => slack.reactionsOn(SLACK_IDS.directChat, msg.ts).length === 0,
      "the reaction to go",
      20_000,
    );
    expect(slack.posted(SLACK_IDS.directChat).map((m) => m.text)).toEqual(["The answer."]);
    // Off only once the answer was out, as when nothing crashed.
    const methods = slack.calls.map((c) => c.method);
    expect(methods.lastIndexOf("reactions.remove")).toBeGreaterThan(methods.indexOf("chat.postMessage"));
  }, 90_000);
});
