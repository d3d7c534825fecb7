import { describe, expect, it } from "vitest";
import type { ModelEvent } from "../src/model.js";
import { OfflineProvider, offlineAnswer } from "../src/providers/offline.js";

async function streamOf(
  provider: OfflineProvider,
  text: string,
): Promise<{ deltas: string[]; events: ModelEvent[] }> {
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
  return { deltas, events };
}

describe("the offline model", () => {
  it("streams its answer word by word when words have a delay between them", async () => {
    const { deltas } = await streamOf(new OfflineProvider(1), "hello there");
    expect(deltas.join("")).toBe(offlineAnswer("hello there"));
    expect(deltas.slice(0, 3)).toEqual(["You ", "said: ", "hello "]);
  });

  it("gives the whole answer as one delta with no delay (nobody could see the words arrive)", async () => {
    const { deltas } = await streamOf(new OfflineProvider(0), "hello there");
    expect(deltas).toEqual([offlineAnswer("hello there")]);
  });

  it("counts its words as output tokens either way", async () => {
    const words = offlineAnswer("hello there").match(/\S+\s*/g)?.length;
    for (const delay of [0, 1]) {
      const { events } = await streamOf(new OfflineProvider(delay), "hello there");
      expect(events.at(-1)).toMatchObject({ type: "done", usage: { outputTokens: words } });
    }
  });
});
