import { afterAll, describe, expect, it } from "vitest";
import { startTestHub, type TestHub } from "../../../test/support/hub.js";

const hubs: TestHub[] = [];
afterAll(async () => {
  for (const hub of hubs) await hub.dispose().catch(() => {});
});

describe("a process's readiness", () => {
  it("names each of its roles whose worker no longer takes work", async () => {
    const hub = await startTestHub({ roles: ["agent", "delivery"] }, "readiness-roles");
    hubs.push(hub);
    expect(await hub.operations.readiness([])).toEqual({ ready: true, reasons: [] });
    await hub.stop();
    const { ready, reasons } = await hub.operations.readiness([]);
    expect(ready).toBe(false);
    expect(reasons).toEqual(
      expect.arrayContaining([
        "the agent role's worker has stopped taking work; restart this hub process",
        "the delivery role's worker has stopped taking work; restart this hub process",
      ]),
    );
  });
});
