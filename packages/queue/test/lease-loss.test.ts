import { describe, expect, it } from "vitest";
import { LeaseLoss } from "../src/lease-loss.js";

describe("LeaseLoss", () => {
  it("tells each listener once, with the first loss's reason, and forgets a listener that stopped", () => {
    const loss = new LeaseLoss();
    const heard: unknown[] = [];
    loss.onLost((reason) => heard.push(["a", reason]));
    const stop = loss.onLost((reason) => heard.push(["b", reason]));
    stop();
    expect(loss.lost).toBe(false);
    const first = new Error("renewal refused");
    loss.lose(first);
    loss.lose(new Error("later"));
    expect(loss.lost).toBe(true);
    expect(heard).toEqual([["a", first]]);
    // A listener added after the loss hears of it at once.
    loss.onLost((reason) => heard.push(["c", reason]));
    expect(heard).toEqual([
      ["a", first],
      ["c", first],
    ]);
  });

  it("makes its signal when read, aborted with the loss's reason whether read before or after it", () => {
    const before = new LeaseLoss();
    const signal = before.signal;
    expect(signal.aborted).toBe(false);
    expect(before.signal).toBe(signal);
    const reason = new Error("lease expired");
    before.lose(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);

    const after = new LeaseLoss();
    after.lose(reason);
    expect(after.signal.aborted).toBe(true);
    expect(after.signal.reason).toBe(reason);
  });
});
