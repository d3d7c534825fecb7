import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { HUB_NODE_FLAGS, HUB_V8_FLAGS, v8FlagsToSet } from "../src/v8-tuning.js";

const repoFile = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), "utf8");

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

describe("the hub's node flags (V8 reads them only at start)", () => {
  it("are on every command line that starts the hub as shipped: npm start, the Docker image, check-build", () => {
    expect(HUB_NODE_FLAGS).toContain("--max-semi-space-size=64");
    // Each file lists the flags as string literals, in order, before the hub's entry.
    const literals = HUB_NODE_FLAGS.map((flag) => `"${flag}"`).join(", ");
    const bootstrap = repoFile("scripts/bootstrap.mjs");
    expect(bootstrap).toContain(`const hubNodeFlags = [${literals}];`);
    expect(bootstrap).toContain(
      'const hubArgs = [...hubNodeFlags, "--import", "tsx", "apps/hub/src/main.ts"];',
    );
    const checkBuild = repoFile("scripts/check-build.mjs");
    expect(checkBuild).toContain(`const nodeFlags = [${literals}];`);
    // Both processes it starts (every role, then a delivery-only one).
    expect(checkBuild.split('[...nodeFlags, "apps/hub/src/main.js"').length - 1).toBe(2);
    expect(repoFile("Dockerfile")).toContain(`CMD ["node", ${literals}, "apps/hub/src/main.js", "start"]`);
  });
});
