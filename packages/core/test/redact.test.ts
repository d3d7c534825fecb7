import { describe, expect, it } from "vitest";
import { collectConfigSecrets, createLogger, parseConfig, redactUrl, SecretRedactor } from "../src/index.js";

const TOKEN = "987654:AAbot-secret-Zx9";

describe("secret redaction in the logger", () => {
  it("removes a secret from messages, error messages, causes, stacks and nested fields", () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: "debug",
      destination: { write: (l: string) => void lines.push(l) },
      secrets: new SecretRedactor([TOKEN, 'pass"word\\12']),
    });
    const url = `http://127.0.0.1:1/bot${TOKEN}/getUpdates`;
    const cause = new Error(`request to ${url} failed, reason: socket hang up`);
    const error = new Error(`Network request for 'getUpdates' failed! (${cause.message})`, { cause });
    logger.warn({ err: error }, "telegram getUpdates failed");
    logger.info(`connecting to ${url}`);
    logger.info({ deep: { list: [{ note: `x${TOKEN}y` }] }, enc: encodeURIComponent(TOKEN) }, "nested");
    logger.child({ bound: TOKEN }).error({ value: 'pass"word\\12' }, "child");
    const out = lines.join("");
    expect(lines).toHaveLength(4);
    expect(out).not.toContain(TOKEN);
    expect(out).not.toContain(encodeURIComponent(TOKEN));
    expect(out).not.toContain("AAbot-secret");
    expect(out).not.toContain("word\\\\12");
    expect(out).toContain("socket hang up");
    expect(out).toContain("[redacted]");
  });

  it("ignores values too short to be secrets, so logs stay readable", () => {
    const redactor = new SecretRedactor(["k", "abc"]);
    expect(redactor.redact("keep abc")).toBe("keep abc");
  });
});

describe("collectConfigSecrets", () => {
  it("finds every secret of a validated config, including URL passwords and unknown *Token keys", () => {
    const config = parseConfig({
      gateway: {
        token: "gateway-token-0123456789",
        password: "owner-password-42",
        clients: [{ name: "bot", token: "client-token-0123456789", scopes: ["read"] }],
      },
      redis: { url: "redis://:redis-pass-77@127.0.0.1:6379" },
      models: {
        providers: {
          openai: { apiKey: "sk-main-key-1", apiKeys: ["sk-spare-key-2", "sk-spare-key-3"] },
        },
      },
      channels: { telegram: { botToken: "123:tg-token-4", webhookSecret: "webhook-secret-0123456" } },
    });
    const found = collectConfigSecrets(
      { ...config, extra: { userToken: "xoxp-user-5", custom: "cust-6xx" } },
      ["custom"],
    );
    expect(found.sort()).toEqual(
      [
        "gateway-token-0123456789",
        "owner-password-42",
        "client-token-0123456789",
        "redis-pass-77",
        "sk-main-key-1",
        "sk-spare-key-2",
        "sk-spare-key-3",
        "123:tg-token-4",
        "webhook-secret-0123456",
        "xoxp-user-5",
        "cust-6xx",
      ].sort(),
    );
  });

  it("finds the password of each URL of a comma-separated cluster list, and of a URL no parser reads", () => {
    const found = (value: string) => collectConfigSecrets({ redis: { url: value } });
    expect(found("redis://:ClusterSecretPw99@127.0.0.1:7991,redis://:OtherNodePw77@127.0.0.1:7992")).toEqual(
      expect.arrayContaining(["ClusterSecretPw99", "OtherNodePw77"]),
    );
    expect(found("redis://:SuperSecretRedisPw@127.0.0.1:99999")).toContain("SuperSecretRedisPw");
    expect(found("redis://user:BadHostPw123@bad host:6379")).toContain("BadHostPw123");
    expect(found("redis://:Pct%25Pw123@h:notaport")).toEqual(
      expect.arrayContaining(["Pct%25Pw123", "Pct%Pw123"]),
    );
    expect(found("redis://:has,comma-pw@127.0.0.1:6379")).toContain("has,comma-pw");
    expect(found("redis://127.0.0.1:6379")).toEqual([]);
    expect(found("redis://127.0.0.1:6379?password=QuerySecretPw1")).toContain("QuerySecretPw1");
  });
});

describe("redactUrl", () => {
  it("hides the whole user and password, a raw '@' or '#' in the password too, of every URL of a list", () => {
    expect(redactUrl("redis://:Secr3t@Part@127.0.0.1:6390")).toBe("redis://***@127.0.0.1:6390");
    expect(redactUrl("redis://:p@ss#word@host:1/2")).toBe("redis://***@host:1/2");
    expect(redactUrl("redis://:a@b@h1:1,redis://h2:2,rediss://u:c@d@h3:3")).toBe(
      "redis://***@h1:1,redis://h2:2,rediss://***@h3:3",
    );
    expect(redactUrl("redis://127.0.0.1:6379/0")).toBe("redis://127.0.0.1:6379/0");
    expect(redactUrl("redis://h:6379?password=s3cret&db=2,redis://h2:1?username=u")).toBe(
      "redis://h:6379?password=***&db=2,redis://h2:1?username=***",
    );
  });
});
