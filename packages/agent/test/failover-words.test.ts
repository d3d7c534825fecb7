import { describe, expect, it } from "vitest";
import { describeDecision } from "../src/failover-words.js";

describe("describeDecision", () => {
  it("says a failover in plain words", () => {
    const at = Date.UTC(2026, 11, 1, 13, 55, 27);
    expect(
      describeDecision(JSON.stringify({ at, ref: "main/big", kind: "overloaded", action: "next_model" })),
    ).toBe("main/big was overloaded at 2026-12-01 13:55:27 UTC, so the hub moved on to the next model.");
    expect(
      describeDecision(
        JSON.stringify({ at, ref: "a/b", kind: "context_overflow", action: "rotate_profile" }),
      ),
    ).toBe(
      "a/b failed (context overflow) at 2026-12-01 13:55:27 UTC, so the hub moved on to the provider's next API key.",
    );
  });

  it("skips what moved nothing and what it cannot read, instead of failing /status", () => {
    for (const raw of [
      JSON.stringify({ at: 1, ref: "a/b", kind: "aborted", action: "next_model" }),
      JSON.stringify({ at: 1, ref: "a/b", kind: "bad_request", action: "surface" }),
      JSON.stringify({ at: "yesterday", ref: "a/b", kind: "network", action: "next_model" }),
      JSON.stringify({ at: 1e20, ref: "a/b", kind: "network", action: "next_model" }),
      JSON.stringify({ at: 1, ref: "a/b", action: "next_model" }),
      "not json",
      "null",
    ])
      expect(describeDecision(raw)).toBeUndefined();
  });
});
