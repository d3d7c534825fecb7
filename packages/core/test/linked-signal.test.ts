import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { linkedSignal } from "../src/index.js";

// A full collection on demand (what --expose-gc gives) for the test of a signal nothing else holds.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

describe("linkedSignal", () => {
  it("follows any parent's abort with its reason, and times out with a TimeoutError", async () => {
    const parent = new AbortController();
    const linked = linkedSignal([new AbortController().signal, parent.signal]);
    parent.abort("stopped");
    expect([linked.signal.aborted, linked.signal.reason]).toEqual([true, "stopped"]);
    const timed = linkedSignal([new AbortController().signal], 20);
    await new Promise((r) => setTimeout(r, 60));
    expect((timed.signal.reason as Error).name).toBe("TimeoutError");
    // Released: neither the parent nor the timer aborts it any more.
    const other = new AbortController();
    const released = linkedSignal([other.signal], 20);
    released.release();
    other.abort();
    await new Promise((r) => setTimeout(r, 60));
    expect(released.signal.aborted).toBe(false);
  });

  it("times out even when only a listener of it is left (AbortSignal.any's is collected, and never fires)", async () => {
    const run = new AbortController();
    const told: string[] = [];
    (() => {
      // As a streaming body holds it: a listener on the signal, no reference to the signal itself.
      linkedSignal([run.signal], 300).signal.addEventListener("abort", function (this: AbortSignal) {
        told.push((this.reason as Error).name);
      });
    })();
    for (let i = 0; i < 6; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(told).toEqual(["TimeoutError"]);
  });
});
