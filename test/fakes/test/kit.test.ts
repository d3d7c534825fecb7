import { Agent, request } from "node:http";
import { describe, expect, it } from "vitest";
import { FakeApi, type RecordedCall, readBody, startHttpServer } from "../src/kit/index.js";

const call = (method: string, params: Record<string, unknown> = {}): RecordedCall => ({
  method,
  params,
  at: Date.now(),
});

describe("fake-API kit", () => {
  it("records calls, matches methods case-insensitively when asked, and waits for settled calls", async () => {
    const api = new FakeApi({ name: "fake x", caseInsensitive: true });
    const first = api.record(call("sendMessage", { n: 1 }));
    const waiting = api.waitForCall("SENDMESSAGE", (c) => c.params.n === 2, 1000);
    api.settle(first);
    const second = api.record(call("sendmessage", { n: 2 }));
    expect(api.callsOf("sendMessage")).toHaveLength(2);
    api.settle(second);
    await expect(waiting).resolves.toBe(second);
    await expect(api.waitForCall("getMe", undefined, 50)).rejects.toThrow(
      "fake x: no getMe call within 50 ms",
    );
  });

  it("queues failures per method and serves stubs", () => {
    const api = new FakeApi<RecordedCall, { status: number }>({ name: "fake y" });
    api.failNext("post", { status: 429 }, 2);
    expect([api.takeFailure("post"), api.takeFailure("post"), api.takeFailure("post")]).toEqual([
      { status: 429 },
      { status: 429 },
      undefined,
    ]);
    expect(api.takeFailure("Post")).toBeUndefined();
    api.stub("extra", (p) => ({ echoed: p.v }));
    expect(api.stubFor("extra")?.({ v: 3 })).toEqual({ echoed: 3 });
    expect(api.stubFor("EXTRA")).toBeUndefined();
  });

  it("serves HTTP on a free port, answers a throwing handler, and closes twice safely", async () => {
    const server = await startHttpServer(
      async (req, res) => {
        const body = (await readBody(req)).toString("utf8");
        if (body === "boom") throw new Error("boom");
        res.writeHead(200).end(body.toUpperCase());
      },
      (res) => res.writeHead(503).end("down"),
    );
    const ok = await fetch(server.url, { method: "POST", body: "hi" });
    expect([ok.status, await ok.text()]).toEqual([200, "HI"]);
    const failed = await fetch(server.url, { method: "POST", body: "boom" });
    expect([failed.status, await failed.text()]).toEqual([503, "down"]);
    await server.close();
    await server.close();
    await expect(fetch(server.url)).rejects.toThrow();
  });

  it("keeps an idle keep-alive connection open past Node's 5 s default, as a platform does", async () => {
    // With the default, the server closed the socket just as a client reused it ("socket hang up").
    const server = await startHttpServer(async (_req, res) => void res.writeHead(200).end("ok"));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<boolean>((resolve, reject) => {
        const req = request(server.url, { agent }, (res) =>
          res.resume().on("end", () => resolve(req.reusedSocket)),
        );
        req.on("error", reject).end();
      });
    try {
      expect(await get()).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 7_000));
      expect(await get()).toBe(true);
    } finally {
      agent.destroy();
      await server.close();
    }
  }, 15_000);
});
