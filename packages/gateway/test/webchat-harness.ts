import { randomUUID } from "node:crypto";
import type { ConformanceHarness, InboundRef } from "@hub/conformance";
import { GatewayClient } from "../../../test/support/gateway-client.js";

const SESSION = "agent:main:webchat:direct:conformance";
const FUZZ_CLIENT = { name: "fuzzer", token: "fuzz-client-token-0123456789", scopes: ["write" as const] };

/** What `direct` returns, so the same chat.send can be sent again. */
interface SentMessage {
  idempotencyKey: string;
  text: string;
}

/**
 * The web chat's harness of the shared conformance suite: its platform is the
 * gateway's WebSocket protocol, driven by a real client (`chat.send` in, `chat`
 * delta events out). The web chat has no groups, threads or rate limits; the
 * fuzz sends mutated `chat.send` params from a second client the suite does not
 * allow, so it starts no runs.
 */
export function webchatHarness(): ConformanceHarness {
  let owner: GatewayClient | undefined;
  let fuzzer: GatewayClient | undefined;
  let gateway: { port: number; token: string } | undefined;
  const client = () => {
    if (!owner) throw new Error("the web chat harness is not attached to a hub");
    return owner;
  };
  const send = async (params: unknown) => {
    const res = await client().request("chat.send", params);
    if (!res.ok) throw new Error(`chat.send failed: ${JSON.stringify(res.error)}`);
  };
  return {
    channel: "webchat",
    textLimit: 8000,
    supportsThreads: false,
    supportsGroups: false,
    supportsFiles: false,
    ids: { user: "owner", group: "no-groups", directChat: SESSION },
    // The hub builds the web chat itself.
    start: async () => undefined,
    hubConfig: () => ({ gateway: { clients: [FUZZ_CLIENT] } }),
    async attach(hub) {
      gateway = hub;
      owner = await GatewayClient.open(hub.port, hub.token);
      fuzzer = await GatewayClient.open(hub.port, FUZZ_CLIENT.token);
    },
    async stop() {
      owner?.close();
      fuzzer?.close();
    },
    async direct(text): Promise<InboundRef> {
      const message: SentMessage = { idempotencyKey: randomUUID(), text };
      await send({ sessionKey: SESSION, ...message });
      return message;
    },
    group: async () => {
      throw new Error("the web chat has no groups");
    },
    commandForAnotherBot: async () => {
      throw new Error("the web chat has no other bots");
    },
    async redeliver(ref) {
      // The client's retry: the same idempotency key again.
      await send({ sessionKey: SESSION, ...(ref as SentMessage) });
    },
    async malformed() {
      client().sendRaw("{not json");
      const res = await client().request("chat.send", { sessionKey: 7, text: null });
      if (res.ok) throw new Error("a malformed chat.send was accepted");
    },
    outbound: (chatId) =>
      client()
        .chatEvents()
        .filter((e) => e.sessionKey === chatId && e.state === "delta")
        .map((e) => ({ text: e.text, wellFormed: true })),
    raw: {
      valid: (text) => ({ text, idempotencyKey: randomUUID() }),
      allowed: (text) => ({ sessionKey: SESSION, text, idempotencyKey: randomUUID() }),
      // One connection, one request at a time: an oversize frame closes it and the next one reconnects.
      concurrency: 1,
      poison: () => [{ text: 7, idempotencyKey: "x" }, { sessionKey: null }, "chat.send", []],
      async deliver(payload) {
        if (!fuzzer || !gateway) throw new Error("the web chat harness is not attached to a hub");
        const connection = fuzzer;
        const res = await Promise.race([connection.request("chat.send", payload), connection.closed]);
        if (!("type" in res)) {
          // A frame over gateway.maxFrameBytes closes the connection (1009), as designed: reconnect.
          fuzzer = await GatewayClient.open(gateway.port, FUZZ_CLIENT.token);
          return { status: res.code === 1009 ? 413 : 503 };
        }
        // The protocol's answers as HTTP would put them: a failure on our side is the 5xx.
        const code = res.ok ? undefined : res.error?.code;
        return { status: res.ok ? 200 : code === "unavailable" || code === "internal" ? 503 : 400 };
      },
    },
  };
}
