import { describe, expect, it } from "vitest";
import { configJsonSchema, HubError, parseConfig } from "../src/index.js";

describe("config", () => {
  it("runs on defaults: web chat on 127.0.0.1:18789 with the offline model", () => {
    const config = parseConfig({});
    expect(config.gateway).toMatchObject({ host: "127.0.0.1", port: 18789 });
    expect(config.agent.model).toBe("offline/echo");
    expect(config.roles).toEqual(["ingress", "agent", "delivery"]);
  });

  it("refuses unknown keys with the path and a fix", () => {
    expect(() => parseConfig({ gateway: { prot: 1 } }, "/x/hub.json5")).toThrow(
      /\/x\/hub\.json5[\s\S]*gateway \(unknown key "prot"\)[\s\S]*config schema/,
    );
  });

  it("says which key a misspelt one probably is, at any level the schema knows", () => {
    const message = (raw: unknown) => {
      try {
        parseConfig(raw, "hub.json5");
      } catch (error) {
        return (error as Error).message;
      }
      return expect.unreachable();
    };
    expect(message({ channel: {} })).toContain(
      '- (top level) (unknown key "channel"): did you mean `channels`? Fix its spelling or remove it; `npm run -s hub -- config schema` lists every key.',
    );
    expect(message({ gatway: {} })).toContain("did you mean `gateway`?");
    // The key is named once, not again in zod's words.
    expect(message({ gatway: {} })).not.toContain("Unrecognized key");
    expect(message({ gateway: { prot: 1 } })).toContain('gateway (unknown key "prot"): ');
    expect(message({ gateway: { prot: 1 } })).toContain("did you mean `port`?");
    // Inside an array's objects, and behind defaults and transforms.
    const client = { name: "c", token: "a-client-token-0123456789", scope: ["read"] };
    expect(message({ gateway: { clients: [client] } })).toContain("did you mean `scopes`?");
    expect(message({ delivery: { maxAtempts: 3 } })).toContain("did you mean `maxAttempts`?");
    // Several at once: each with its own guess.
    expect(message({ gatway: {}, agnet: {} })).toContain(
      'did you mean `gateway` for "gatway", `agent` for "agnet"?',
    );
    // Nothing close: no guess, the plain fix.
    expect(message({ zzzqqq: 1 })).toContain(
      '(unknown key "zzzqqq"): remove it or fix its spelling; `npm run -s hub -- config schema` lists every key.',
    );
  });

  it("refuses wrong types with the path", () => {
    try {
      parseConfig({ gateway: { port: "eighty" } }, "hub.json5");
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(HubError);
      expect((error as Error).message).toMatch(/gateway\.port: .*set it to a number/);
    }
  });

  it("says an object where zod says object or record, and a URL's scheme where one is missing", () => {
    const config = {
      agent: "x",
      channels: [],
      models: { providers: { p: { baseUrl: "api.example.com/v1" } } },
    };
    expect(() => parseConfig(config, "hub.json5")).toThrow(/- agent: .*; set it to an object\./);
    expect(() => parseConfig(config, "hub.json5")).toThrow(/- channels: .*; set it to an object\./);
    expect(() => parseConfig(config, "hub.json5")).toThrow(
      /models\.providers\.p\.baseUrl: .*set it to a full URL, with its scheme \(e\.g\. https:\/\/host\/path\)/,
    );
  });

  it("tells to quote an id typed as a number", () => {
    const channels = { webchat: { allowFrom: [4242] } };
    expect(() => parseConfig({ channels }, "hub.json5")).toThrow(
      /channels\.webchat\.allowFrom\.0: .*set it to a string: put the number in quotes/,
    );
  });

  it("reads delivery.maxAge as a duration with its unit, and the older maxAgeSeconds", () => {
    const maxAgeMs = (delivery: Record<string, unknown>) => parseConfig({ delivery }).delivery.maxAgeMs;
    expect(maxAgeMs({})).toBe(30 * 60_000);
    expect(maxAgeMs({ maxAge: "90s" })).toBe(90_000);
    expect(maxAgeMs({ maxAge: "2h" })).toBe(7_200_000);
    expect(maxAgeMs({ maxAge: "1.5m" })).toBe(90_000);
    expect(maxAgeMs({ maxAge: "250ms" })).toBe(250);
    expect(maxAgeMs({ maxAge: " 5 m " })).toBe(300_000);
    expect(maxAgeMs({ maxAgeSeconds: 60 })).toBe(60_000);
    expect(() => parseConfig({ delivery: { maxAge: "soon" } }, "hub.json5")).toThrow(
      /delivery\.maxAge: "soon" is not a duration: write it with its unit, like "30m"/,
    );
    // A bare number is refused, not guessed at (1800 read as milliseconds would expire every answer).
    expect(() => parseConfig({ delivery: { maxAge: 1800 } }, "hub.json5")).toThrow(
      /delivery\.maxAge: .*string/,
    );
    expect(() => parseConfig({ delivery: { maxAge: "0s" } })).toThrow(
      /delivery\.maxAge: "0s" is not a duration/,
    );
    expect(() => parseConfig({ delivery: { maxAge: "5m", maxAgeSeconds: 60 } })).toThrow(
      /set either delivery\.maxAge or delivery\.maxAgeSeconds, not both/,
    );
  });

  it("applies environment overrides", () => {
    const config = parseConfig({}, "c", {
      HUB_GATEWAY_PORT: "1234",
      REDIS_URL: "redis://10.0.0.1:6380",
      OPENAI_API_KEY: "sk-x",
      HUB_MODEL: "openai/gpt-4o-mini",
    });
    expect(config.gateway.port).toBe(1234);
    expect(config.redis.url).toBe("redis://10.0.0.1:6380");
    expect(config.models.providers.openai?.apiKey).toBe("sk-x");
    expect(config.agent.model).toBe("openai/gpt-4o-mini");
  });

  it("generates a JSON schema from the zod schema", () => {
    const schema = configJsonSchema() as { properties: Record<string, unknown> };
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(["gateway", "agent", "models", "redis", "channels"]),
    );
  });
});

describe("config: Redis URLs", () => {
  const messageOf = (env: Record<string, string>, raw: unknown = {}): string => {
    try {
      parseConfig(raw, "/x/hub.json5", env);
    } catch (error) {
      expect(error).toBeInstanceOf(HubError);
      return (error as Error).message;
    }
    return expect.unreachable();
  };

  it("refuses a URL ioredis cannot use, with a sentence naming REDIS_URL and no part of the URL", () => {
    const bad: Array<[string, RegExp]> = [
      ["redis://:SuperSecretRedisPw@127.0.0.1:99999", /port is not a number from 1 to 65535/],
      ["redis://127.0.0.1:notaport", /port is not a number from 1 to 65535/],
      ["redis://127.0.0.1:0", /port is not a number from 1 to 65535/],
      ["redis://bad host:6379", /cannot be read as a URL/],
      ["redis://127.0.0.1:6391/abc", /database .* is not a whole number/],
      ["redis://127.0.0.1:6391?db=x", /database .* is not a whole number/],
      ["http://127.0.0.1:6379", /does not start with "redis:\/\/"/],
      [
        "redis://:ClusterSecretPw99@127.0.0.1:7991,redis://:ClusterSecretPw99@127.0.0.1:notaport",
        /port is not a number/,
      ],
    ];
    for (const [url, problem] of bad) {
      const message = messageOf({ REDIS_URL: url });
      expect(message).toMatch(
        /^These environment variables .*\n {2}- REDIS_URL: redis\.url must be written redis:\/\//,
      );
      expect(message).toMatch(problem);
      expect(message).toContain("correct REDIS_URL");
      expect(message).not.toMatch(/Secret|bad host|notaport|abc|\/x\/hub\.json5/);
    }
  });

  it("names redis.url and redis.cluster of the file when the file set them", () => {
    expect(messageOf({}, { redis: { url: "redis://h:99999" } })).toMatch(
      /^The configuration in \/x\/hub\.json5 is not valid:\n {2}- redis\.url: must be written .* port/,
    );
    expect(messageOf({}, { redis: { cluster: ["redis://h:7000", "redis://:pw-pw-pw@h/x"] } })).toMatch(
      /redis\.cluster\.1: must be written .* database/,
    );
  });

  it("does not check a REDIS_URL that redis.cluster leaves unused", () => {
    const config = parseConfig({ redis: { cluster: ["redis://h:7000"] } }, "/x/hub.json5", {
      REDIS_URL: "redis://127.0.0.1:notaport",
    });
    expect(config.redis.url).toBe("redis://h:7000,");
    // Without the cluster, the same variable is refused.
    expect(messageOf({ REDIS_URL: "redis://127.0.0.1:notaport" })).toMatch(
      /REDIS_URL: redis\.url must be written/,
    );
  });

  it("takes every form ioredis reads: TLS, IPv6, a database, user and password, a cluster's seed list", () => {
    for (const url of [
      "redis://127.0.0.1:6379",
      "rediss://user:p%40ss@redis.example.com:6380/3",
      "redis://[::1]:6379/0",
      "redis://localhost/",
      "redis://h?db=2",
      "redis://:pw@10.0.0.1:7000,redis://:pw@10.0.0.2:7000",
    ])
      expect(parseConfig({}, "c", { REDIS_URL: url }).redis.url).toBe(url);
  });
});

describe("config: values from the environment", () => {
  const messageOf = (env: Record<string, string>, raw: unknown = {}): string => {
    try {
      parseConfig(raw, "/x/hub.json5", env);
    } catch (error) {
      return (error as Error).message;
    }
    return expect.unreachable();
  };

  it("names the variable that set the key (its value unless it is a secret) and does not blame the file", () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ HUB_GATEWAY_PORT: "abc" }, "HUB_GATEWAY_PORT=abc: gateway.port expects a number;"],
      [
        { HUB_GATEWAY_PORT: "99999" },
        "HUB_GATEWAY_PORT=99999: gateway.port expects a number of at most 65535;",
      ],
      [
        { HUB_GATEWAY_TOKEN: "short-secret" },
        "HUB_GATEWAY_TOKEN: gateway.token must be at least 16 characters;",
      ],
      [
        { HUB_ROLES: "ingress,agnet" },
        'HUB_ROLES=ingress,agnet: roles.1 expects one of "ingress", "agent", "delivery";',
      ],
      [
        { HUB_SESSIONS_STORE: "Redis" },
        'HUB_SESSIONS_STORE=Redis: sessions.store expects one of "files", "redis";',
      ],
    ];
    for (const [env, line] of cases) {
      const message = messageOf(env);
      expect(message).toContain(line);
      expect(message).toContain(`correct ${Object.keys(env)[0]} or unset it.`);
      expect(message).not.toContain("hub.json5");
      expect(message).not.toContain("short-secret");
    }
  });

  it("lists the environment's problems and the file's apart when both have some", () => {
    const message = messageOf({ HUB_GATEWAY_PORT: "abc" }, { gateway: { prot: 1, port: 80 } });
    expect(message).toMatch(
      /^These environment variables .*\n {2}- HUB_GATEWAY_PORT=abc: gateway\.port .*\nThe configuration in \/x\/hub\.json5 is not valid:\n {2}- gateway \(unknown key "prot"\)/,
    );
  });
});

describe("OPENAI_API_KEY", () => {
  const key = "sk-from-env";
  const keyOf = (raw: unknown, env: NodeJS.ProcessEnv) =>
    parseConfig(raw, "hub.json5", { OPENAI_API_KEY: key, ...env }).models.providers.openai?.apiKey;

  it("is the key of OpenAI's own server, or of a baseUrl the environment pairs it with", () => {
    expect(keyOf({}, {})).toBe(key);
    expect(keyOf({ models: { providers: { openai: { baseUrl: "https://api.openai.com/v1" } } } }, {})).toBe(
      key,
    );
    expect(keyOf({}, { OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" })).toBe(key);
  });

  it("is never sent to another server a provider named openai points at in the file", () => {
    expect(
      keyOf({ models: { providers: { openai: { baseUrl: "https://openrouter.ai/api/v1" } } } }, {}),
    ).toBeUndefined();
    expect(
      keyOf(
        { models: { providers: { openai: { baseUrl: "http://127.0.0.1:8000/v1", apiKey: "own" } } } },
        {},
      ),
    ).toBe("own");
  });
});

describe("agent.tools.sendTargets", () => {
  const targets = (sendTargets: object) => ({
    agent: { tools: { sendTargets } },
    channels: { telegram: { accounts: { main: { allowFrom: ["1"] } } } },
  });

  it("refuses a target whose channel or account the config does not have, at start", () => {
    expect(() =>
      parseConfig(targets({ ops: { channel: "telegrm", accountId: "main", chatId: "-1" } }), "hub.json5"),
    ).toThrow(
      /agent\.tools\.sendTargets\.ops\.channel: names channel "telegrm", which is not configured \(configured: webchat, telegram\); did you mean `telegram`\?/,
    );
    expect(() => parseConfig(targets({ ops: { channel: "telegram", chatId: "-1" } }), "hub.json5")).toThrow(
      /agent\.tools\.sendTargets\.ops\.accountId: names account "default" of telegram, which has main/,
    );
  });

  it("takes a target of a configured account, and the web chat", () => {
    const config = parseConfig(
      targets({
        ops: { channel: "telegram", accountId: "main", chatId: "-1" },
        web: { channel: "webchat", chatId: "x" },
      }),
    );
    expect(Object.keys(config.agent.tools.sendTargets)).toEqual(["ops", "web"]);
  });
});
