import { describe, expect, it } from "vitest";
import { plausibleTokens } from "../src/turn.js";

describe("plausibleTokens", () => {
  it("takes a provider's whole, non-negative token counts, and nothing absurd (1e18, negative, fractional, NaN)", () => {
    expect([12, 0, 100_000_000].map(plausibleTokens)).toEqual([12, 0, 100_000_000]);
    expect([1e18, -5, 1.5, Number.NaN, undefined].map(plausibleTokens)).toEqual([0, 0, 0, 0, 0]);
  });
});
