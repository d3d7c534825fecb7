import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeOpenAI } from "../fakes/src/index.js";
import type { GatewayClient } from "../support/gateway-client.js";
import { type ModelHub, startModelHub } from "../support/hub.js";

// A turn that ends without a whole answer (nothing said, cut at the output limit, filtered, stopped by the
// tool-loop guard) says so in the chat: the user is never left with silence or a cut-off answer taken for whole.

let setup: ModelHub;
let model: FakeOpenAI;
let client: GatewayClient;
beforeAll(async () => {
  setup = await startModelHub("turn-endings");
  ({ model, client } = setup);
});
afterAll(() => setup.dispose());

// What the chat shows for one message: the blocks its run delivered, in order.
async function answerTo(name: string): Promise<string> {
  const runId = `ending-${name}`;
  await client.request("chat.send", {
    sessionKey: `agent:main:webchat:direct:${name}`,
    text: name,
    idempotencyKey: runId,
  });
  await client.terminal(runId);
  return client
    .chatEvents(runId)
    .filter((e) => e.state === "delta")
    .map((e) => e.text)
    .join("\n");
}

describe("a turn that ends without a whole answer", () => {
  it("says so: an empty answer, a filtered one, one cut at the output limit", async () => {
    model.script({ text: "" });
    expect(await answerTo("empty")).toBe(
      "Sorry, the model gave an empty answer. Please try again, or say it differently.",
    );
    model.script({ text: "", finishReason: "content_filter" });
    expect(await answerTo("filtered")).toBe(
      "Sorry, I could not answer: the model provider's content filter withheld the answer.",
    );
    model.script({ text: "Here is how to", finishReason: "content_filter" });
    expect(await answerTo("half-filtered")).toMatch(
      /^Here is how to\s+\[The rest of the answer was withheld by the model provider's content filter\.\]$/,
    );
    model.script({ text: "This answer was cut by the max tok", finishReason: "length" });
    expect(await answerTo("cut")).toMatch(
      /\[The answer was cut off here: the model reached its output limit\.\]$/,
    );
  });

  it("an answer past 100,000 characters is cut there, and says so", async () => {
    model.script({ text: "word ".repeat(30_000), chunkSize: 5000 });
    const shown = await answerTo("overlong");
    expect(
      shown.endsWith(
        "[The answer was cut off here: it is longer than the 100,000 characters one answer sends.]",
      ),
    ).toBe(true);
    expect(shown.replace(/\s+/g, "").length).toBeLessThan(100_000);
    expect((await client.terminal("ending-overlong")).text?.length).toBeLessThanOrEqual(100_000);
  });

  it("the tool-loop guard's stop is said, not silence", async () => {
    const call = { text: "", toolCalls: [{ name: "current_time", arguments: "{}" }] };
    model.script(...Array.from({ length: 8 }, () => call));
    expect(await answerTo("loop")).toBe(
      "Sorry, I could not answer: the model kept calling tools without answering.",
    );
  });
});
