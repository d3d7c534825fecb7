import { describe, expect, it, vi } from "vitest";
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

  it("tells every listener when one throws, and reports that throw as an EventTarget would", () => {
    const loss = new LeaseLoss();
    const broken = new Error("listener bug");
    const heard: string[] = [];
    loss.onLost(() => {
      throw broken;
    });
    loss.onLost(() => heard.push("second"));
    const ticks: Array<() => void> = [];
    const nextTick = vi.spyOn(process, "nextTick").mockImplementation(((fn: () => void) => {
      ticks.push(fn);
    }) as typeof process.nextTick);
    try {
      expect(() => loss.lose(new Error("renewal refused"))).not.toThrow();
    } finally {
      nextTick.mockRestore();
    }
    expect(heard).toEqual(["second"]);
    expect(ticks).toHaveLength(1);
    expect(() => ticks[0]!()).toThrow(broken);
  });
});
