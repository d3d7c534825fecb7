import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const FIXTURE = fileURLToPath(new URL("./fixtures/closure-source.ts", import.meta.url));

// `npm start`, `hub`, the bench and the tests' child processes run the TypeScript sources through tsx's
// loader. Stock tsx compiles with esbuild's keepNames, which wraps every closure in a `__name(fn, "name")`
// call run each time the closure is made: a property definition per closure, 4.3% of a CPU profile's
// self time under the bench's load. `patches/tsx@<version>.patch` turns it off (names stay
// right: nothing is renamed without minifying identifiers). This goes red if a tsx upgrade drops the patch.
describe("the TypeScript loader the hub runs under", () => {
  it("makes closures without a naming call, and they keep their names", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", FIXTURE], { encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    const printed = JSON.parse(run.stdout) as { source: string; name: string };
    expect(printed.source).toContain("++count");
    expect(printed.source).not.toContain("__name");
    expect(printed.name).toBe("next");
  });
});
