import { describe, expect, it } from "vitest";
import { ModelError, type ModelEvent, type ModelProvider } from "../src/model.js";
import { lazyProvider } from "../src/providers/lazy.js";
import { OfflineProvider } from "../src/providers/offline.js";

async function collect(provider: ModelProvider): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const e of provider.stream({ model: "echo", messages: [{ role: "user", content: "hi" }] }))
    events.push(e);
  return events;
}

describe("lazyProvider", () => {
  it("loads the provider at the first call only, and streams its events", async () => {
    let loads = 0;
    const lazy = lazyProvider("offline", async () => {
      loads++;
      return new OfflineProvider();
    });
    expect(loads).toBe(0);
    const events = await collect(lazy);
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "stop" });
    await collect(lazy);
    expect(loads).toBe(1);
  });

  it("fails a call whose load failed as a ModelError, and loads again at the next call", async () => {
    let loads = 0;
    const lazy = lazyProvider("flaky", async () => {
      if (++loads === 1) throw new Error("Cannot find package 'openai'");
      return new OfflineProvider();
    });
    const failed = collect(lazy);
    await expect(failed).rejects.toBeInstanceOf(ModelError);
    await expect(failed).rejects.toThrow(
      "flaky: the provider could not be loaded (Error: Cannot find package 'openai')",
    );
    expect((await collect(lazy)).at(-1)).toMatchObject({ type: "done" });
    expect(loads).toBe(2);
  });
});
