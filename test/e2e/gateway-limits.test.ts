import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { type FakeWorld, startFakeWorld } from "../support/hub.js";
import { waitFor } from "../support/redis.js";

// What one gateway connection may make the hub hold: requests in flight, and answers it does not read.
let world: FakeWorld;
beforeAll(async () => {
  world = await startFakeWorld("gwlimits", {});
});
afterAll(async () => world.dispose());

const answers = (client: GatewayClient) => client.frames.filter((f) => f.type === "res");

describe("gateway limits per connection", () => {
  it("requests beyond 32 in flight are answered busy at once; every request gets an answer", async () => {
    const client = await GatewayClient.open(world.hub.port, world.hub.token);
    const before = answers(client).length;
    // One write: the hub reads them all before answering any.
    const frames = Array.from({ length: 100 }, (_, i) =>
      JSON.stringify({ type: "req", id: `h${i}`, method: "chat.history", params: { limit: 1000 } }),
    );
    for (const frame of frames) client.sendRaw(frame);
    await waitFor(() => answers(client).length - before === 100, "an answer to every request");
    const busy = answers(client).filter((f) => f.type === "res" && !f.ok && f.error?.code === "busy");
    expect(busy.length).toBeGreaterThan(0);
    expect(busy[0]).toMatchObject({ error: { message: expect.stringMatching(/At most 32 requests/) } });
    client.close();
  });

  it("names of the object's own properties (toString, __proto__) are unknown methods, not missing scopes", async () => {
    const client = await GatewayClient.open(world.hub.port, world.hub.token);
    for (const method of ["toString", "__proto__", "constructor"]) {
      const res = await client.request(method, {});
      expect(res.error?.code).toBe("unknown_method");
    }
    client.close();
  });

  it("a client that stops reading is cut off instead of growing the hub's memory", async () => {
    world.model.script({ text: "x".repeat(30_000) });
    const client = await GatewayClient.open(world.hub.port, world.hub.token);
    await client.request("chat.send", { text: "y".repeat(30_000), idempotencyKey: "limits-big-0001" });
    await client.terminal("limits-big-0001", 20_000);
    const closed = new Promise<void>((resolve) => client.ws.once("close", () => resolve()));
    // The client reads nothing more; each history answer is about 60 KB.
    const socket = (client.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    socket.pause();
    for (let wave = 0; wave < 30; wave++) {
      for (let i = 0; i < 32; i++)
        client.sendRaw(
          JSON.stringify({ type: "req", id: `w${wave}-${i}`, method: "chat.history", params: {} }),
        );
      await new Promise((r) => setTimeout(r, 30));
    }
    socket.resume();
    await closed;
    // Far fewer answers than the 960 asked: the hub stopped holding them when the client stopped reading.
    expect(answers(client).length).toBeLessThan(960);
  }, 60_000);
});
