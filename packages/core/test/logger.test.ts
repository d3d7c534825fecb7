import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { captureLogs, createLogger, REDACTED_PATHS } from "../src/index.js";

/** The fields of each line `log` writes, parsed (time dropped: it differs between two loggers). */
function linesOf(log: (logger: ReturnType<typeof createLogger>) => void, logger?: "pino-redact") {
  const lines: string[] = [];
  const destination = { write: (l: string) => void lines.push(l) };
  const created =
    logger === "pino-redact"
      ? pino(
          { level: "info", name: "hub", redact: { paths: REDACTED_PATHS, censor: "[redacted]" } },
          destination,
        )
      : createLogger({ level: "info", destination });
  log(created);
  return lines.map((l) => {
    const { time: _, ...fields } = JSON.parse(l);
    return fields;
  });
}

class HttpError extends Error {
  readonly headers = { authorization: "Bearer err-secret", accept: "json" };
  readonly token = "err-token";
  readonly status = 401;
}

describe("logger redaction", () => {
  it("never writes tokens, keys or authorization headers", () => {
    const { logger, lines } = captureLogs("info");
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

describe("logger redaction is pino's redaction of REDACTED_PATHS", () => {
  const objects: Array<Record<string, unknown>> = [
    { runId: "r1", status: "completed", segments: 2, ok: true },
    { token: "t", botToken: "b", apiKey: "k", password: "p", other: "kept" },
    { token: undefined, password: null, apiKey: 0 },
    {
      auth: { token: "t", user: "ann" },
      params: { auth: { token: "x" }, q: 1 },
      headers: { authorization: "B", host: "h" },
    },
    { req: { headers: { authorization: "B", accept: "*" }, url: "/x" }, res: { token: "t", apiKey: "k" } },
    {
      config: {
        gateway: { token: "g", port: 1 },
        models: { providers: { a: { apiKey: "1", url: "u" }, b: { url: "v" } } },
      },
    },
    { config: { models: { providers: [{ apiKey: "in an array" }, { name: "n" }] } } },
    { list: [{ token: "arrays are not walked" }], nested: { deep: { token: "two levels down is kept" } } },
    { headers: "not an object", auth: null, params: { other: 1 } },
    { err: new HttpError("refused") },
    { err: { token: "plain object under err", message: undefined } },
    { date: new Date(0), big: { password: "x", when: new Date(0) } },
  ];

  it.each(objects.map((o, i) => [i, o]))("writes the same line as pino's redact option (%i)", (_, fields) => {
    const ours = linesOf((l) => l.info(fields, "msg"));
    const theirs = linesOf((l) => l.info(fields, "msg"), "pino-redact");
    expect(ours).toEqual(theirs);
  });

  it("censors a child logger's bindings the same way, and leaves the caller's objects unchanged", () => {
    const bindings = { component: "x", auth: { token: "child-secret" }, headers: { authorization: "B" } };
    const copy = structuredClone(bindings);
    const ours = linesOf((l) => l.child(bindings).info({ runId: "r" }, "child"));
    const theirs = linesOf((l) => l.child(bindings).info({ runId: "r" }, "child"), "pino-redact");
    expect(ours).toEqual(theirs);
    expect(JSON.stringify(ours)).not.toContain("child-secret");
    expect(bindings).toEqual(copy);
  });
});

describe("captureLogs (the test kit's logger)", () => {
  it("keeps the lines at its level and above, as written and parsed, redacted as any line", () => {
    const { logger, lines, records } = captureLogs("warn");
    logger.info("not kept");
    logger.child({ channel: "telegram" }).warn({ token: "tok-secret" }, "kept");
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain("tok-secret");
    expect(records).toEqual([expect.objectContaining({ level: 40, channel: "telegram", msg: "kept" })]);
  });
});
