import { offlineAnswer } from "@hub/agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { GatewayClient } from "../support/gateway-client.js";
import { startTestHub, type TestHub } from "../support/hub.js";

let hub: TestHub;
beforeAll(async () => {
  hub = await startTestHub({}, "webchat");
});
afterAll(async () => hub.dispose());

describe("gateway + web chat pipeline", () => {
  it("answers chat.send with an ACK, ordered deltas and one final event, then serves history", async () => {
    const client = await GatewayClient.open(hub.port, hub.token);
    const res = await client.request("chat.send", { text: "hello hub", idempotencyKey: "run-hello-0001" });
    expect(res.ok).toBe(true);
    expect(res.payload).toMatchObject({ runId: "run-hello-0001", status: "accepted" });
    const final = await client.terminal("run-hello-0001");
    expect(final.state).toBe("final");
    expect(final.text).toBe(offlineAnswer("hello hub"));
    const deltas = client.chatEvents("run-hello-0001").filter((e) => e.state === "delta");
    expect(deltas.map((d) => d.seq)).toEqual(deltas.map((_, i) => i));
    expect(deltas.map((d) => d.text).join("\n\n")).toBe(offlineAnswer("hello hub"));
    // The final event comes after every delta.
    const events = client.chatEvents("run-hello-0001");
    expect(events.at(-1)?.state).toBe("final");

    const history = await client.request("chat.history", { limit: 10 });
    expect(history.ok).toBe(true);
    const messages = (history.payload as { messages: Array<{ role: string; text: string }> }).messages;
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[0]?.text).toBe("hello hub");
    expect(messages[1]?.text).toBe(offlineAnswer("hello hub"));
    client.close();
  });

  it("refuses a wrong token and closes the socket", async () => {
    const client = await GatewayClient.open(hub.port);
    const res = await client.request("connect", { auth: { token: "wrong-token-wrong-token" } });
    expect(res.ok).toBe(false);
    expect(res.error?.code).toBe("unauthorized");
    expect((await client.closed).code).toBe(4001);
  });

  it("refuses a first frame that is not connect (missing token)", async () => {
    const client = await GatewayClient.open(hub.port);
    const res = await client.request("chat.send", { text: "hi", idempotencyKey: "sneaky-0001" });
    expect(res.ok).toBe(false);
    expect(res.error?.code).toBe("unauthorized");
    await client.closed;
  });

  it("refuses a connect without auth", async () => {
    const client = await GatewayClient.open(hub.port);
    const res = await client.request("connect", {});
    expect(res.error?.code).toBe("unauthorized");
    await client.closed;
  });

  it("answers malformed frames with an error frame and keeps the connection and process alive", async () => {
    const client = await GatewayClient.open(hub.port, hub.token);
    client.sendRaw("{not json");
    client.sendRaw(JSON.stringify({ type: "req", method: "health" })); // no id
    client.sendRaw(JSON.stringify({ hello: "world" }));
    await client.waitFor(
      (f) =>
        f.type === "res" &&
        f.ok === false &&
        f.error?.code === "bad_frame" &&
        client.frames.filter((x) => x.type === "res").length >= 3,
      "three error frames",
    );
    expect(client.frames.filter((f) => f.type === "res" && f.error?.code === "bad_frame")).toHaveLength(3);
    // Wrong elsewhere (a key the protocol does not have) but with an id: the error comes under that id.
    client.sendRaw(JSON.stringify({ type: "req", id: 9, method: "health", extra: 1 }));
    const underId = await client.waitFor((f) => f.type === "res" && f.id === 9, "the error under id 9");
    expect(underId).toMatchObject({ ok: false, error: { code: "bad_frame" } });
    const bad = await client.request("chat.send", { text: "", idempotencyKey: "x" });
    expect(bad.error?.code).toBe("bad_params");
    // A text that shows nothing is answered as not accepted, and why (not a server error).
    const blank = await client.request("chat.send", { text: "\u200b ", idempotencyKey: "blank-text-0001" });
    expect(blank).toMatchObject({
      ok: true,
      payload: { status: "rejected", error: "Not accepted: the message is empty." },
    });
    const unknown = await client.request("no.such.method", {});
    expect(unknown.error?.code).toBe("unknown_method");
    const health = await client.request("health");
    expect(health).toMatchObject({ ok: true, payload: { ok: true } });
    client.close();
  });

  it("routes a run's events only to clients watching that session", async () => {
    const a = await GatewayClient.open(hub.port, hub.token);
    const b = await GatewayClient.open(hub.port, hub.token);
    const res = await a.request("chat.send", {
      sessionKey: "agent:main:webchat:direct:alice",
      text: "for alice",
      idempotencyKey: "run-alice-0001",
    });
    expect(res.ok).toBe(true);
    await a.terminal("run-alice-0001");
    expect(b.chatEvents("run-alice-0001")).toEqual([]);
    a.close();
    b.close();
  });
});

describe("gateway pings", () => {
  it("disconnects a client that answers no ping (gone without a close); one that answers stays", async () => {
    const pinged = await startTestHub({ gateway: { pingIntervalMs: 300 } }, "webchat-ping");
    try {
      const answering = await GatewayClient.open(pinged.port, pinged.token);
      // A client gone silent: it never answers a ping, as a half-open connection cannot.
      const silent = new WebSocket(`ws://127.0.0.1:${pinged.port}/`, { autoPong: false });
      const silentClosed = new Promise<void>((resolve) => silent.once("close", () => resolve()));
      await new Promise((resolve, reject) => silent.once("open", resolve).once("error", reject));
      silent.send(
        JSON.stringify({ type: "req", id: 1, method: "connect", params: { auth: { token: pinged.token } } }),
      );
      await silentClosed;
      // Several ping rounds later the answering client is still served.
      await new Promise((r) => setTimeout(r, 1000));
      expect((await answering.request("health", {})).ok).toBe(true);
      answering.close();
    } finally {
      await pinged.dispose();
    }
  });
});
