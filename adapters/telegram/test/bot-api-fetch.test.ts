import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Api, HttpError, InputFile } from "grammy";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/redis.js";
import { botApiFetch } from "../src/bot-api-fetch.js";
import { describeTelegramError } from "../src/errors.js";

const token = "123456789:AAHsecretsecretsecretsecret";
let server: Server | undefined;

afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

// A Bot API stand-in that answers every call with `answer`, and keeps what it was sent.
async function botApi(answer: (body: string) => { status: number; type: string; text: string }) {
  const seen: Array<{ url: string; type: string; body: string }> = [];
  const listening = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("latin1");
      seen.push({ url: req.url ?? "", type: req.headers["content-type"] ?? "", body });
      const { status, type, text } = answer(body);
      res.writeHead(status, { "content-type": type }).end(text);
    });
  });
  server = listening;
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
  const apiRoot = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
  return { api: new Api(token, { apiRoot, fetch: botApiFetch() as never }), seen };
}

describe("botApiFetch (grammY's Bot API calls over undici)", () => {
  it("sends JSON calls and reads the Bot API's answer, errors included", async () => {
    const { api, seen } = await botApi((body) =>
      body.includes('"chat_id":7')
        ? { status: 200, type: "application/json", text: '{"ok":true,"result":true}' }
        : {
            status: 400,
            type: "application/json",
            text: '{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}',
          },
    );
    await expect(api.sendChatAction(7, "typing")).resolves.toBe(true);
    await expect(api.sendChatAction(8, "typing")).rejects.toMatchObject({ error_code: 400 });
    expect(seen[0]).toMatchObject({ url: `/bot${token}/sendChatAction`, type: "application/json" });
    expect(JSON.parse(seen[0]?.body ?? "")).toEqual({ chat_id: 7, action: "typing" });
  });

  it("uploads a file as multipart", async () => {
    const { api, seen } = await botApi(() => ({
      status: 200,
      type: "application/json",
      text: '{"ok":true,"result":{"message_id":1,"date":1,"chat":{"id":7,"type":"private"}}}',
    }));
    await api.sendDocument(7, new InputFile(Buffer.from("file body 123"), "notes.txt"));
    expect(seen[0]?.type).toMatch(/^multipart\/form-data; boundary=/);
    expect(seen[0]?.body).toContain("filename=notes.txt");
    expect(seen[0]?.body).toContain("file body 123");
  });

  it("fails an answer that is not the Bot API's (a proxy's error page) as a network error, token cut", async () => {
    const { api } = await botApi(() => ({
      status: 502,
      type: "text/html",
      text: "<html>Bad Gateway</html>",
    }));
    const error = await api.getMe().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(describeTelegramError(error)).toMatch(
      /^network error: invalid json response body at .*\/bot<token>\/getMe reason: /,
    );
    expect(describeTelegramError(error)).not.toContain("AAHsecret");
  });

  it("names the method whose answer was cut off mid-body, token cut", async () => {
    const listening = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      res.write('{"ok":true,');
      setTimeout(() => res.destroy(), 20);
    });
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
    const apiRoot = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    const api = new Api(token, { apiRoot, fetch: botApiFetch() as never });
    const error = await api.getMe().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(describeTelegramError(error)).toMatch(
      /^network error: request to .*\/bot<token>\/getMe failed, reason: /,
    );
    expect(describeTelegramError(error)).not.toContain("AAHsecret");
  });

  it("names the method a refused connection failed on, token cut", async () => {
    const { api } = await botApi(() => ({ status: 200, type: "application/json", text: "{}" }));
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = undefined;
    const error = await api.getMe().catch((e: unknown) => e);
    expect(describeTelegramError(error)).toMatch(
      /^network error: request to .*\/bot<token>\/getMe failed, reason: .*ECONNREFUSED/,
    );
    expect(describeTelegramError(error)).not.toContain("AAHsecret");
  });

  it("on one connection, a call that hangs past grammY's timeout fails and frees it for the next", async () => {
    let calls = 0;
    const listening = createServer((_req, res) => {
      // The first call never gets an answer (a black-holed long poll); the next one does.
      if (++calls > 1)
        res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true,"result":[]}');
    });
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
    const apiRoot = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    const api = new Api(token, {
      apiRoot,
      timeoutSeconds: 1,
      fetch: botApiFetch({ connections: 1 }) as never,
    });
    const started = Date.now();
    await expect(api.getUpdates({ timeout: 0 })).rejects.toBeInstanceOf(HttpError);
    expect(Date.now() - started).toBeLessThan(3000);
    await expect(api.getUpdates({ timeout: 0 })).resolves.toEqual([]);
    listening.closeAllConnections();
  });

  it("close ends its kept-alive connection at once, and cuts a call still hanging after the grace", async () => {
    const open = new Set<Socket>();
    let calls = 0;
    const listening = createServer((_req, res) => {
      // The first call is answered (its connection is then kept alive); the second hangs.
      if (++calls === 1)
        res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true,"result":[]}');
    });
    listening.on("connection", (socket: Socket) => {
      open.add(socket);
      socket.on("close", () => open.delete(socket));
    });
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
    const apiRoot = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    const idle = botApiFetch();
    await new Api(token, { apiRoot, fetch: idle as never }).getUpdates({ timeout: 0 });
    expect(open.size).toBe(1);
    await idle.close();
    await waitFor(() => open.size === 0, "the connection closed");

    const busy = botApiFetch();
    const hanging = new Api(token, { apiRoot, fetch: busy as never }).getUpdates({ timeout: 0 });
    hanging.catch(() => {});
    await waitFor(() => calls === 2, "the hanging call");
    const started = Date.now();
    await busy.close(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(2000);
    await expect(hanging).rejects.toBeInstanceOf(HttpError);
    await waitFor(() => open.size === 0, "the connection closed");
  });

  it("close lets a call under way finish within the grace", async () => {
    const listening = createServer((_req, res) => {
      setTimeout(
        () => res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true,"result":[]}'),
        100,
      );
    });
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
    const apiRoot = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    const fetch = botApiFetch();
    const call = new Api(token, { apiRoot, fetch: fetch as never }).getUpdates({ timeout: 0 });
    await new Promise((r) => setTimeout(r, 20));
    await fetch.close(5_000);
    await expect(call).resolves.toEqual([]);
  });
});
