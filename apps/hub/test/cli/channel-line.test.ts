import { describe, expect, it } from "vitest";
import { channelLine } from "../../src/cli/channel-line.js";

describe("a channel account's line in hub status", () => {
  const now = 1_800_000_000_000;
  it("gives the state and why, or once connected again the last error and how long ago", () => {
    const report = (status: Record<string, unknown>) =>
      channelLine(
        { channel: "telegram", accountId: "support", status: { since: now, ...status } } as never,
        now,
      );
    expect(report({ state: "reconnecting", reason: "api.telegram.org could not be reached" })).toBe(
      "telegram/support: reconnecting (api.telegram.org could not be reached)",
    );
    expect(
      report({
        state: "connected",
        lastError: { reason: "api.telegram.org could not be reached", at: now - 300_000 },
      }),
    ).toBe("telegram/support: connected (last error 5 min ago: api.telegram.org could not be reached)");
    expect(report({ state: "connected" })).toBe("telegram/support: connected");
  });
});
