import type { ChatMessage } from "@hub/agent";
import { createLogger, parseConfig } from "@hub/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "../../../test/fakes/src/index.js";
import { createModelResolver } from "../src/models.js";

// The model resolver built from config: what a provider's keys change in the requests it makes.
let claude: FakeAnthropic;
beforeAll(async () => {
  claude = await startFakeAnthropic();
});
afterAll(() => claude.close());

const stable = "# Identity\n\nThe operator's part.\n\n";
const messages: ChatMessage[] = [
  { role: "system", content: `${stable}# Channel\n\nA direct chat.\n`, stableChars: stable.length },
  { role: "user", content: "hi" },
];

// The `system` of the request an Anthropic provider configured with `promptCache` sends.
async function systemSent(promptCache: boolean | undefined): Promise<unknown> {
  const provider = {
    api: "anthropic",
    baseUrl: claude.url,
    apiKey: "k",
    ...(promptCache === undefined ? {} : { promptCache }),
  };
  const config = parseConfig({
    agent: { model: "claude/sonnet" },
    models: { providers: { claude: provider } },
  });
  const resolved = createModelResolver(config, createLogger({ level: "silent" }))("claude/sonnet");
  for await (const _ of resolved.provider.stream({ model: resolved.model, messages }));
  return claude.requests.at(-1)?.system;
}

describe("an Anthropic provider from config", () => {
  it("marks the operator's part for the prompt cache by default, and not with promptCache: false", async () => {
    expect(await systemSent(undefined)).toEqual([
      { type: "text", text: "# Identity\n\nThe operator's part.", cache_control: { type: "ephemeral" } },
      { type: "text", text: "# Channel\n\nA direct chat." },
    ]);
    expect(await systemSent(false)).toBe(`${stable}# Channel\n\nA direct chat.\n`);
  });
});
