import { describe, expect, it } from "vitest";
import { LightAbort, type StopSignal } from "../src/light-abort.js";

describe("LightAbort", () => {
  it("calls each listener still added once, when aborted, and none added after", () => {
    const abort = new LightAbort();
    const heard: string[] = [];
    const a = () => heard.push("a");
    const b = () => heard.push("b");
    abort.addEventListener("abort", a);
    abort.addEventListener("abort", a); // added twice: called once, as an EventTarget does
    abort.addEventListener("abort", b);
    abort.removeEventListener("abort", b);
    expect(abort.listening).toBe(1);
    const reason = new Error("stopping");
    abort.abort(reason);
    abort.abort(new Error("later"));
    abort.addEventListener("abort", b);
    expect(heard).toEqual(["a"]);
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe(reason);
    expect(abort.listening).toBe(0);
  });

  it("tells onAbort's listener the reason, at once when already aborted", () => {
    const abort = new LightAbort();
    const heard: unknown[] = [];
    const stop = abort.onAbort((reason) => heard.push(["first", reason]));
    abort.onAbort((reason) => heard.push(["second", reason]));
    stop();
    abort.abort("why");
    abort.onAbort((reason) => heard.push(["late", reason]));
    expect(heard).toEqual([
      ["second", "why"],
      ["late", "why"],
    ]);
  });

  it("aborts with an AbortError when given no reason, and its signal with it, read before or after", () => {
    const before = new LightAbort();
    const signal = before.signal;
    before.abort();
    expect(signal.aborted).toBe(true);
    expect((before.reason as Error).name).toBe("AbortError");
    expect(signal.reason).toBe(before.reason);
    const after = new LightAbort();
    after.abort("gone");
    expect(after.signal.aborted).toBe(true);
    expect(after.signal.reason).toBe("gone");
  });

  it("stands where an AbortSignal does for a wait, and an AbortSignal where it does", async () => {
    // A wait written against StopSignal, as the reply dispatcher's settle wait is.
    const waitFor = (stop: StopSignal) =>
      new Promise<unknown>((resolve) =>
        stop.addEventListener("abort", () => resolve(stop.reason), { once: true }),
      );
    const light = new LightAbort();
    const controller = new AbortController();
    const waits = [waitFor(light), waitFor(controller.signal)];
    light.abort("light");
    controller.abort("controller");
    expect(await Promise.all(waits)).toEqual(["light", "controller"]);
  });

  it("skips a listener an earlier one removed during the abort, as an AbortSignal does", () => {
    const heard: string[] = [];
    const second = () => heard.push("second");
    const light = new LightAbort();
    light.addEventListener("abort", () => light.removeEventListener("abort", second));
    light.addEventListener("abort", second);
    light.abort();
    const controller = new AbortController();
    controller.signal.addEventListener("abort", () => controller.signal.removeEventListener("abort", second));
    controller.signal.addEventListener("abort", second);
    controller.abort();
    expect(heard).toEqual([]);
  });
});
