import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../../../../test/support/cli.js";
import { freePort } from "../../../../test/support/hub-process.js";

const stateDir = mkdtempSync(join(tmpdir(), "hub-gateway-token-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

describe("hub start on an address others can reach", { timeout: 120_000 }, () => {
  it("is refused without a token the operator set, before anything starts or a token is generated", async () => {
    const env = {
      HUB_STATE_DIR: stateDir,
      HUB_GATEWAY_HOST: "0.0.0.0",
      HUB_GATEWAY_PORT: String(await freePort()),
    };
    const run = await runCli(["start"], env, 60_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      "hub: Refusing to listen on 0.0.0.0 without a gateway token; set HUB_GATEWAY_TOKEN (or gateway.token)",
    );
    expect(existsSync(join(stateDir, "gateway-token"))).toBe(false);
  });
});
