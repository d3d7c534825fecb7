import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { channelPlugins, type HubTuning, type RunningHub, startHub } from "@hub/app";
import {
  type ChannelAdapter,
  createLogger,
  type HubConfigInput,
  type HubLogger,
  parseConfig,
} from "@hub/core";
import {
  FakeChatAdapter,
  type FakeChatPlatform,
  type FakeOpenAI,
  startFakeChatPlatform,
  startFakeOpenAI,
} from "../fakes/src/index.js";
import { GatewayClient } from "./gateway-client.js";
import { dropPrefix, REDIS_URL, testPrefix } from "./redis.js";

/** A hub started for one test, on its own port, state dir and Redis prefix. */
export interface TestHub extends RunningHub {
  stateDir: string;
  prefix: string;
  url: string;
  /** Stops the hub and removes its state and Redis keys. */
  dispose(): Promise<void>;
}

/** Fast mailbox tuning so crash recovery happens within a test's patience. */
export const FAST_TUNING: HubTuning = { leaseMs: 1500, sweepIntervalMs: 200, graceMs: 1000 };

/** Starts a whole hub (all roles unless `config.roles` says otherwise) against the real Redis. */
export async function startTestHub(
  config: HubConfigInput = {},
  name = "hub",
  adapters: ChannelAdapter[] = [],
  logger?: HubLogger,
): Promise<TestHub> {
  const prefix = testPrefix(name);
  const stateDir = mkdtempSync(join(tmpdir(), "hub-test-"));
  const parsed = parseConfig(
    {
      ...config,
      gateway: { port: 0, ...config.gateway },
      redis: { url: REDIS_URL, prefix },
      agent: { offlineTokenDelayMs: 0, ...config.agent },
    },
    "test config",
    {},
    channelPlugins,
  );
  const token = "test-token-0123456789abcdef";
  const hub = await startHub(parsed, {
    stateDir,
    token,
    logger: logger ?? createLogger({ level: process.env.HUB_TEST_LOG ?? "silent" }),
    tuning: FAST_TUNING,
    adapters,
  });
  // Channels connect in the background; tests start once each one's first attempt is over.
  await hub.channelsSettled();
  return {
    ...hub,
    stateDir,
    prefix,
    url: `http://127.0.0.1:${hub.port}/`,
    dispose: async () => {
      await hub.stop();
      rmSync(stateDir, { recursive: true, force: true });
      await dropPrefix(prefix);
    },
  };
}

/** A hub wired to a fake model (`fake/test-model`) and a fake chat platform posing as `telegram`. */
export interface FakeWorld {
  hub: TestHub;
  model: FakeOpenAI;
  platform: FakeChatPlatform;
  dispose(): Promise<void>;
}

/** Starts a hub against the fake OpenAI-compatible model and a fake chat platform. */
export async function startFakeWorld(
  name: string,
  channels: HubConfigInput["channels"],
  options: {
    textLimit?: number;
    agent?: HubConfigInput["agent"];
    gateway?: HubConfigInput["gateway"];
    /** Where the hub logs (default: silent, or HUB_TEST_LOG's level). */
    logger?: HubLogger;
  } = {},
): Promise<FakeWorld> {
  const model = await startFakeOpenAI();
  const platform = await startFakeChatPlatform();
  const hub = await startTestHub(
    {
      agent: { ...options.agent, model: "fake/test-model" },
      ...(options.gateway ? { gateway: options.gateway } : {}),
      models: { providers: { fake: { baseUrl: model.url, apiKey: "test-key" } } },
      channels,
    },
    name,
    [
      new FakeChatAdapter(
        "telegram",
        platform.url,
        options.textLimit ? { textLimit: options.textLimit } : {},
      ),
    ],
    options.logger,
  );
  return {
    hub,
    model,
    platform,
    dispose: async () => {
      await hub.dispose();
      await model.close();
      await platform.close();
    },
  };
}

/** A hub on the fake OpenAI-compatible model, with a gateway client signed in as its owner. */
export interface ModelHub {
  hub: TestHub;
  model: FakeOpenAI;
  client: GatewayClient;
  dispose(): Promise<void>;
}

/** Starts a hub whose model is the fake one (`fake/m`), `agent` added to its agent config, and a client. */
export async function startModelHub(name: string, agent: HubConfigInput["agent"] = {}): Promise<ModelHub> {
  const model = await startFakeOpenAI();
  const hub = await startTestHub(
    {
      agent: { ...agent, model: "fake/m" },
      models: { providers: { fake: { baseUrl: model.url, apiKey: "k" } } },
    },
    name,
  );
  const client = await GatewayClient.open(hub.port, hub.token);
  return {
    hub,
    model,
    client,
    dispose: async () => {
      client.close();
      await hub.dispose();
      await model.close();
    },
  };
}
