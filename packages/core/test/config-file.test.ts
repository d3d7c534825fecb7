import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "hub-config-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const env = { HUB_STATE_DIR: join(dir, "state") };

describe("loadConfig: the file", () => {
  it("names where a missing file was asked for: --config or HUB_CONFIG", () => {
    const missing = join(dir, "missing.json5");
    expect(() => loadConfig({ path: missing, env })).toThrow(
      `The configuration file ${missing} does not exist; create it, or drop --config to use the defaults.`,
    );
    expect(() => loadConfig({ env: { ...env, HUB_CONFIG: missing } })).toThrow(
      `The configuration file ${missing} does not exist; create it, or unset HUB_CONFIG to use the defaults.`,
    );
  });

  it("says a directory is one, and what to point at instead", () => {
    const folder = join(dir, "folder");
    mkdirSync(folder);
    expect(() => loadConfig({ env: { ...env, HUB_CONFIG: folder } })).toThrow(
      `${folder} is a directory; point HUB_CONFIG at a JSON5 file such as ${join(folder, "hub.json5")}.`,
    );
  });

  it("reads an empty file as the defaults, and says YAML is not what it reads", () => {
    const empty = join(dir, "empty.json5");
    writeFileSync(empty, "\n  \n");
    const loaded = loadConfig({ path: empty, env });
    expect(loaded.fromFile).toBe(true);
    expect(loaded.config.gateway.port).toBe(18789);
    const yaml = join(dir, "hub.yaml");
    writeFileSync(yaml, "gateway:\n  port: 1234\n");
    expect(() => loadConfig({ path: yaml, env })).toThrow(/could not be read as JSON5 .*not YAML/);
  });
});
