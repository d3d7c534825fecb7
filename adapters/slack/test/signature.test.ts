import { startFakeSlack } from "@hub/fakes";
import { verifySlackRequest } from "@slack/bolt";
import { describe, expect, it } from "vitest";
import { slackSignature, verifySlackSignature } from "../src/signature.js";

const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const now = 1_531_420_618_000;
const body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&command=%2Fweather";

describe("Slack request signatures", () => {
  it("agree with Bolt's own verifier, so our check and the fake's signing follow Slack's scheme", () => {
    const signature = slackSignature(SECRET, now / 1000, body);
    expect(signature).toMatch(/^v0=[0-9a-f]{64}$/);
    expect(() =>
      verifySlackRequest({
        signingSecret: SECRET,
        body,
        headers: { "x-slack-signature": signature, "x-slack-request-timestamp": now / 1000 },
        logger: undefined,
      }),
    ).toThrow(/stale|old|timestamp/i);
    const fresh = Math.floor(Date.now() / 1000);
    verifySlackRequest({
      signingSecret: SECRET,
      body,
      headers: {
        "x-slack-signature": slackSignature(SECRET, fresh, body),
        "x-slack-request-timestamp": fresh,
      },
    });
    expect(
      verifySlackSignature(SECRET, { signature, timestamp: String(now / 1000) }, body, now),
    ).toBeUndefined();
  });

  it("takes only the exact lower-case hex Slack sends, as Bolt does: not upper case, not an extra digit", () => {
    const ts = String(now / 1000);
    const signature = slackSignature(SECRET, ts, body);
    const check = (s: string) => verifySlackSignature(SECRET, { signature: s, timestamp: ts }, body, now);
    expect(check(signature)).toBeUndefined();
    expect(check(`v0=${signature.slice(3).toUpperCase()}`)).toBe("signature mismatch");
    expect(check(`${signature}a`)).toBe("signature mismatch");
    expect(check(signature.slice(0, -1))).toBe("signature mismatch");
  });

  it("fails a wrong secret, a changed body, a stale or far-future timestamp, and missing headers", () => {
    const ts = String(now / 1000);
    const signature = slackSignature(SECRET, ts, body);
    expect(verifySlackSignature("other", { signature, timestamp: ts }, body, now)).toBe("signature mismatch");
    expect(verifySlackSignature(SECRET, { signature, timestamp: ts }, `${body}&x=1`, now)).toBe(
      "signature mismatch",
    );
    expect(verifySlackSignature(SECRET, { signature, timestamp: ts }, body, now + 301_000)).toMatch(
      /5 minutes/,
    );
    expect(verifySlackSignature(SECRET, { signature, timestamp: ts }, body, now - 301_000)).toMatch(
      /5 minutes/,
    );
    expect(verifySlackSignature(SECRET, { signature: undefined, timestamp: ts }, body, now)).toMatch(
      /missing/,
    );
    expect(verifySlackSignature(SECRET, { signature: "v1=abc", timestamp: ts }, body, now)).toMatch(
      /version/,
    );
  });

  it("match what the fake Slack sends to an events URL", async () => {
    const fake = await startFakeSlack();
    const seen: Array<{ headers: Record<string, string | string[] | undefined>; body: string }> = [];
    const { createServer } = await import("node:http");
    const server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => {
        raw += c;
      });
      req.on("end", () => {
        seen.push({ headers: req.headers, body: raw });
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const address = server.address();
    fake.eventsUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/slack/events`;
    await fake.deliver(fake.envelope({ type: "message", channel: "D1", user: "U1", text: "x", ts: "1.2" }), {
      retryNum: 2,
      retryReason: "http_timeout",
    });
    const [request] = seen;
    const header = (name: string) => String(request?.headers[name]);
    expect(
      verifySlackSignature(
        fake.signingSecret,
        { signature: header("x-slack-signature"), timestamp: header("x-slack-request-timestamp") },
        request?.body ?? "",
      ),
    ).toBeUndefined();
    expect([header("x-slack-retry-num"), header("x-slack-retry-reason")]).toEqual(["2", "http_timeout"]);
    expect(JSON.parse(request?.body ?? "{}")).toMatchObject({
      type: "event_callback",
      event: { type: "message" },
    });
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await fake.close();
  });
});
