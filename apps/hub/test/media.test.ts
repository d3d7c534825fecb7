import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, parseConfig } from "@hub/core";
import { describe, expect, it } from "vitest";
import { dropPrefix, REDIS_URL, testPrefix, waitFor } from "../../../test/support/redis.js";
import { AdapterRegistry } from "../src/adapter-registry.js";
import { startHub } from "../src/hub.js";
import { buildMediaPreparer } from "../src/media.js";
import { modelInputsOf } from "../src/models.js";

const parse = (raw: unknown) => parseConfig(raw, "hub.json5", {});

describe("attachments from config", () => {
  it("knows which models take images, and the provider's image limit", () => {
    const config = parse({
      models: {
        providers: {
          openai: { apiKey: "sk-x" },
          claude: { api: "anthropic", apiKey: "k" },
          ollama: { baseUrl: "http://127.0.0.1:11434/v1" },
          vllm: { baseUrl: "http://127.0.0.1:8000/v1", vision: ["qwen-vl"] },
        },
        aliases: { eyes: "vllm/qwen-vl" },
      },
    });
    expect(modelInputsOf(config, "openai/gpt-4o")).toEqual({ images: { maxBytes: 20 * 1024 * 1024 } });
    expect(modelInputsOf(config, "claude/claude-sonnet-4-5")).toEqual({ images: { maxBytes: 3_932_160 } });
    expect(modelInputsOf(config, "ollama/llama3")).toEqual({});
    expect(modelInputsOf(config, "eyes")).toEqual({ images: { maxBytes: 20 * 1024 * 1024 } });
    expect(modelInputsOf(config, "vllm/other")).toEqual({});
    expect(modelInputsOf(config, "offline/echo")).toEqual({});
  });

  it("refuses at start a transcription model that is not on an OpenAI-compatible provider", () => {
    const bad = parse({
      agent: { transcriptionModel: "claude/whisper" },
      models: { providers: { claude: { api: "anthropic", apiKey: "k" } } },
    });
    expect(() => buildMediaPreparer(bad, "/tmp", new AdapterRegistry())).toThrow(
      /agent.transcriptionModel "claude\/whisper" needs models.providers.claude with an OpenAI-compatible API/,
    );
    expect(() => parse({ agent: { transcriptionModel: "whisper" } })).toThrow(/provider\/model/);
  });

  it("refuses at start a transcription model on OpenAI without a key (its SDK loads only at the first note)", () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const keyless = parse({
        agent: { transcriptionModel: "openai/whisper-1" },
        models: { providers: { openai: { api: "openai" } } },
      });
      expect(() => buildMediaPreparer(keyless, "/tmp", new AdapterRegistry())).toThrow(
        'agent.transcriptionModel "openai/whisper-1" needs an API key; set models.providers.openai.apiKey or OPENAI_API_KEY.',
      );
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });
});

describe("downloaded attachments", () => {
  it("past media.retentionHours are deleted by the running hub, without waiting for another download", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "hub-media-"));
    const prefix = testPrefix("media-sweep");
    const media = join(stateDir, "media");
    mkdirSync(media, { mode: 0o700 });
    writeFileSync(join(media, "old"), "a photo from two days ago");
    const twoDaysAgo = (Date.now() - 48 * 3_600_000) / 1000;
    utimesSync(join(media, "old"), twoDaysAgo, twoDaysAgo);
    writeFileSync(join(media, "fresh"), "a photo from now");
    const config = parse({
      gateway: { port: 0 },
      redis: { url: REDIS_URL, prefix },
      media: { retentionHours: 24 },
    });
    const hub = await startHub(config, {
      stateDir,
      token: "media-sweep-token-0123456789",
      logger: createLogger({ level: "silent" }),
    });
    try {
      await waitFor(() => !existsSync(join(media, "old")), "the expired attachment deleted");
      expect(existsSync(join(media, "fresh"))).toBe(true);
    } finally {
      await hub.stop();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
    }
  });
});
