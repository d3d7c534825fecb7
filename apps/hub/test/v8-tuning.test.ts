import { describe, expect, it } from "vitest";
import { HUB_V8_FLAGS, v8FlagsToSet } from "../src/v8-tuning.js";

describe("the hub's V8 flags", () => {
  it("turns allocation-site pretenuring off when the command line says nothing of it", () => {
    expect(HUB_V8_FLAGS).toContain("--no-allocation-site-pretenuring");
    expect(v8FlagsToSet([])).toEqual(["--no-allocation-site-pretenuring"]);
    expect(v8FlagsToSet(["--import", "tsx", "--max-old-space-size=160"])).toEqual([
      "--no-allocation-site-pretenuring",
    ]);
  });

  it("leaves a flag the operator set on node's command line, either way and in either spelling", () => {
    expect(v8FlagsToSet(["--allocation-site-pretenuring"])).toEqual([]);
    expect(v8FlagsToSet(["--no-allocation-site-pretenuring"])).toEqual([]);
    expect(v8FlagsToSet(["--allocation_site_pretenuring"])).toEqual([]);
  });
});
