import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { privateText, startFakeTelegram } from "@hub/fakes";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startHubProcess } from "../support/hub-process.js";
import { dropPrefix, testPrefix } from "../support/redis.js";

const RECORDER = fileURLToPath(new URL("../support/record-imports.mjs", import.meta.url));
/** The platform and model SDKs, each loaded only by a hub that runs that channel or provider. */
const SDKS = [
  "grammy",
  "discord.js",
  "@slack/bolt",
  "@whiskeysockets/baileys",
  "openai",
  "@anthropic-ai/sdk",
];

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

// The packages a `hub start` process resolved, once it answered a Telegram message or served the web chat.
async function sdksLoadedBy(config: string, env: Record<string, string>, use?: () => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), "hub-sdks-"));
  const prefix = testPrefix("sdks");
  cleanups.push(async () => {
    rmSync(dir, { recursive: true, force: true });
    await dropPrefix(prefix);
  });
  writeFileSync(join(dir, "hub.json5"), config);
  const imports = join(dir, "imports.txt");
  writeFileSync(imports, "");
  const hub = await startHubProcess(
    {
      HUB_STATE_DIR: join(dir, "state"),
      HUB_CONFIG: join(dir, "hub.json5"),
      HUB_REDIS_PREFIX: prefix,
      HUB_IMPORTS_FILE: imports,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${RECORDER}`,
      ...env,
    },
    await freePort(),
  );
  try {
    await use?.();
  } finally {
    await hub.stop();
  }
  const urls = readFileSync(imports, "utf8");
  return SDKS.filter((sdk) => urls.includes(`/node_modules/${sdk}/`));
}

describe("a hub loads only the SDKs of what it runs", () => {
  it("the web chat on the offline model loads no platform or model SDK", async () => {
    expect(await sdksLoadedBy("{}", {})).toEqual([]);
  });

  it("a Telegram hub loads grammY, and no other channel's SDK", async () => {
    const telegram = await startFakeTelegram({ token: "7:SDKS" });
    cleanups.push(() => telegram.close());
    const config = `{ channels: { telegram: { apiRoot: "${telegram.apiRoot}", dmPolicy: "open", allowFrom: ["*"] } } }`;
    const loaded = await sdksLoadedBy(config, { TELEGRAM_BOT_TOKEN: telegram.token }, async () => {
      telegram.pushUpdate(privateText({ chatId: 71, fromId: 71, text: "hello" }));
      await telegram.waitForCall("sendMessage", (c) => String(c.params.chat_id) === "71", 30_000);
    });
    expect(loaded).toEqual(["grammy"]);
  });
});
