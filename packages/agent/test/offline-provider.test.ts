import { describe, expect, it } from "vitest";
import type { ModelEvent } from "../src/model.js";
import { OfflineProvider, offlineAnswer } from "../src/providers/offline.js";

async function deltasOf(provider: OfflineProvider, text: string): Promise<string[]> {
  const deltas: string[] = [];
  const events: ModelEvent[] = [];
  for await (const event of provider.stream({
    model: "offline",
    messages: [{ role: "user", content: text }],
    signal: new AbortController().signal,
  })) {
    events.push(event);
    if (event.type === "text") deltas.push(event.delta);
  }
  expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "stop" });
  return deltas;
}

describe("the offline model", () => {
  it("streams its answer word by word when words have a delay between them", async () => {
    const deltas = await deltasOf(new OfflineProvider(1), "hello there");
    expect(deltas.join("")).toBe(offlineAnswer("hello there"));
    expect(deltas.slice(0, 3)).toEqual(["You ", "said: ", "hello "]);
  });

  it("gives the whole answer as one delta with no delay (nobody could see the words arrive)", async () => {
    expect(await deltasOf(new OfflineProvider(0), "hello there")).toEqual([offlineAnswer("hello there")]);
  });
});
