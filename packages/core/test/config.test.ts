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

  it("refuses wrong types with the path", () => {
    try {
      parseConfig({ gateway: { port: "eighty" } }, "hub.json5");
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(HubError);
      expect((error as Error).message).toMatch(/gateway\.port: .*set it to a number/);
    }
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
