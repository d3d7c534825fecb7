import { describe, expect, it } from "vitest";
import { createLogger } from "../src/index.js";

describe("logger redaction", () => {
  it("never writes tokens, keys or authorization headers", () => {
    const lines: string[] = [];
    const logger = createLogger({ level: "info", destination: { write: (l: string) => void lines.push(l) } });
    logger.info({ token: "tok-secret-1", botToken: "123:bot-secret-2", apiKey: "sk-secret-3" }, "flat");
    logger.info({ auth: { token: "tok-secret-4" }, params: { auth: { token: "tok-secret-5" } } }, "nested");
    logger.info(
      {
        headers: { authorization: "Bearer secret-6" },
        req: { headers: { authorization: "Bearer secret-7" } },
      },
      "headers",
    );
    logger.info(
      {
        config: { gateway: { token: "secret-8" }, models: { providers: { openai: { apiKey: "secret-9" } } } },
      },
      "config",
    );
    const out = lines.join("\n");
    for (const secret of [
      "secret-1",
      "secret-2",
      "secret-3",
      "secret-4",
      "secret-5",
      "secret-6",
      "secret-7",
      "secret-8",
      "secret-9",
    ]) {
      expect(out).not.toContain(secret);
    }
    expect(out).toContain("[redacted]");
  });
});
