import { runIdForMessage } from "@hub/core";
import { connectProof } from "@hub/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../support/gateway-client.js";
import { type FakeWorld, startFakeWorld } from "../support/hub.js";
import { waitFor } from "../support/redis.js";

const WRITER = "writer-only-token-0123456789";
const READER = "reader-only-token-0123456789";
const OPERATOR = "operator-token-0123456789ab";
const APPROVER = "approver-token-0123456789ab";
const POSTER = "poster-token-0123456789abcd";
const POSTER2 = "second-poster-token-0123456";
const TG_SESSION = "agent:main:telegram:direct:1";

let world: FakeWorld;
beforeAll(async () => {
  world = await startFakeWorld(
    "gwauth",
    { telegram: { dmPolicy: "allowlist", allowFrom: ["1"] } },
    {
      agent: { tools: { approvals: { current_time: "ask" }, approvalTimeoutSeconds: 20 } },
      gateway: {
        clients: [
          { name: "writer", token: WRITER, scopes: ["write", "read"] },
          { name: "reader", token: READER, scopes: ["read"] },
          // May use every Telegram session, but may not answer approvals asked of someone else.
          {
            name: "operator",
            token: OPERATOR,
            scopes: ["read", "write"],
            sessions: ["agent:main:telegram:*"],
          },
          { name: "approver", token: APPROVER, scopes: ["write", "approvals"], sessions: [TG_SESSION] },
          // May post into the Telegram session, but not read it.
          { name: "poster", token: POSTER, scopes: ["write"], sessions: [TG_SESSION] },
          { name: "poster2", token: POSTER2, scopes: ["write"], sessions: [TG_SESSION] },
        ],
      },
    },
  );
});
afterAll(async () => world.dispose());

let n = 1;
const telegramText = (chatId: string) => world.platform.messages.filter((m) => m.chatId === chatId);

/** A Telegram DM whose run asks the Telegram user to approve a tool call; resolves with the code and runId. */
async function pendingTelegramApproval(): Promise<{ code: string; runId: string }> {
  world.model.script({ toolCalls: [{ name: "current_time", arguments: "{}" }] }, { text: "It is late." });
  const before = telegramText("1").length;
  const result = await world.hub.dispatcher!.dispatchInboundMessage({
    channel: "telegram",
    messageId: `auth-${n++}`,
    chat: { type: "direct", id: "1" },
    sender: { id: "1", name: "Tg User" },
    body: "what time is it?",
    timestamp: Date.now(),
  });
  let code = "";
  await waitFor(() => {
    code =
      /\/approve ([A-Z0-9]{6})/.exec(
        telegramText("1")
          .slice(before)
          .map((m) => m.text)
          .join("\n"),
      )?.[1] ?? "";
    return code !== "";
  }, "the approval request in the Telegram chat");
  return { code, runId: (result as { runId: string }).runId };
}

describe("gateway scopes and sessions", () => {
  it("a write-only client cannot approve a Telegram user's tool call, abort their run, or see their session", async () => {
    const { code, runId } = await pendingTelegramApproval();
    const writer = await GatewayClient.open(world.hub.port, WRITER);
    const approve = await writer.request("chat.send", {
      sessionKey: TG_SESSION,
      text: `/approve ${code}`,
      idempotencyKey: "writer-approve-1",
    });
    expect(approve.error?.code).toBe("forbidden");
    expect((await writer.request("chat.abort", { runId })).error?.code).toBe("forbidden");
    expect((await writer.request("chat.history", { sessionKey: TG_SESSION })).error?.code).toBe("forbidden");

    // With the session granted but without `approvals`, plain messages go through and approvals do not.
    const operator = await GatewayClient.open(world.hub.port, OPERATOR);
    const again = await operator.request("chat.send", {
      sessionKey: TG_SESSION,
      text: `/approve ${code}`,
      idempotencyKey: "operator-approve-1",
    });
    expect(again.error?.code).toBe("forbidden");
    expect(again.error?.message).toContain('"approvals" scope');
    expect((await operator.request("chat.history", { sessionKey: TG_SESSION })).ok).toBe(true);

    // The `approvals` scope answers it; the Telegram run then finishes with the tool's result.
    const approver = await GatewayClient.open(world.hub.port, APPROVER);
    const ok = await approver.request("chat.send", {
      sessionKey: TG_SESSION,
      text: `/approve ${code}`,
      idempotencyKey: "approver-approve-1",
    });
    expect(ok.ok).toBe(true);
    expect(await approver.terminal("approver-approve-1")).toMatchObject({ text: "Approved." });
    await waitFor(() => telegramText("1").some((m) => m.text.includes("It is late.")), "the Telegram answer");
    // The refused client was told nothing about the Telegram run (the operator, granted the session, may be).
    expect(writer.chatEvents(runId)).toHaveLength(0);
    for (const c of [writer, operator, approver]) c.close();
  }, 30_000);

  it("an approval hidden behind a control character the hub strips is refused without the approvals scope", async () => {
    const { code } = await pendingTelegramApproval();
    const operator = await GatewayClient.open(world.hub.port, OPERATOR);
    // Admission strips C0 control characters, so the hub would read each of these as `/approve <code>`.
    for (const [i, lead] of ["\u0000", "\u0001", "\u007f", "\u001b "].entries()) {
      const hidden = await operator.request("chat.send", {
        sessionKey: TG_SESSION,
        text: `${lead}/approve ${code}`,
        idempotencyKey: `operator-hidden-${i}`,
      });
      expect(hidden.error?.code).toBe("forbidden");
    }
    const approver = await GatewayClient.open(world.hub.port, APPROVER);
    await approver.request("chat.send", {
      sessionKey: TG_SESSION,
      text: `/approve ${code}`,
      idempotencyKey: "approver-approve-2",
    });
    expect(await approver.terminal("approver-approve-2")).toMatchObject({ text: "Approved." });
    for (const c of [operator, approver]) c.close();
  }, 30_000);

  it("a client without the read scope hears the answers to its own messages, not the rest of the session", async () => {
    const poster = await GatewayClient.open(world.hub.port, POSTER);
    expect((await poster.request("chat.history", { sessionKey: TG_SESSION })).error?.code).toBe("forbidden");
    world.model.script({ text: "Noted, poster." });
    const sent = await poster.request("chat.send", {
      sessionKey: TG_SESSION,
      text: "a note from the poster",
      idempotencyKey: "poster-note-1",
    });
    expect(sent.ok).toBe(true);
    expect(await poster.terminal("poster-note-1")).toMatchObject({ state: "final" });
    // Then the Telegram user talks in that session: the answer is theirs to read, not the poster's.
    world.model.script({ text: "Private answer for the Telegram user." });
    const before = telegramText("1").length;
    const result = await world.hub.dispatcher!.dispatchInboundMessage({
      channel: "telegram",
      messageId: `poster-${n++}`,
      chat: { type: "direct", id: "1" },
      sender: { id: "1", name: "Tg User" },
      body: "something private",
      timestamp: Date.now(),
    });
    await waitFor(() => telegramText("1").length > before, "the Telegram answer");
    const runId = (result as { runId: string }).runId;
    await new Promise((r) => setTimeout(r, 300));
    expect(poster.chatEvents(runId)).toHaveLength(0);
    poster.close();
  }, 30_000);

  it("a write-only client cannot read another client's answer by resending its idempotency key; its own resend still answers", async () => {
    const poster = await GatewayClient.open(world.hub.port, POSTER);
    const key = "poster-private-1";
    expect(
      (await poster.request("chat.send", { sessionKey: TG_SESSION, text: "mine", idempotencyKey: key })).ok,
    ).toBe(true);
    expect(await poster.terminal(key)).toMatchObject({ state: "final" });
    // The answer as delivered (whatever the fake model said), which only the first poster may be told.
    const answer = poster
      .chatEvents(key)
      .filter((e) => e.state === "delta")
      .map((e) => e.text)
      .join("");
    expect(answer).not.toBe("");

    // Another write-only client of the same session, with the first one's key: refused, told nothing.
    const other = await GatewayClient.open(world.hub.port, POSTER2);
    const stolen = await other.request("chat.send", {
      sessionKey: TG_SESSION,
      text: "x",
      idempotencyKey: key,
    });
    expect(stolen.ok).toBe(false);
    expect(stolen.error?.code).toBe("forbidden");
    expect(stolen.error?.message).toBe(
      "This idempotency key belongs to another client's message; use a new key.",
    );
    expect(JSON.stringify(other.frames)).not.toContain(answer);
    expect(other.chatEvents(key)).toHaveLength(0);

    // The sender's own retry (a new connection, as after a reconnect) gets the recorded answer.
    const again = await GatewayClient.open(world.hub.port, POSTER);
    const retried = await again.request("chat.send", {
      sessionKey: TG_SESSION,
      text: "mine",
      idempotencyKey: key,
    });
    expect(retried.payload).toMatchObject({ runId: key, status: "completed", text: answer });
    // A client with `read` on the session may see it, as before.
    const operator = await GatewayClient.open(world.hub.port, OPERATOR);
    const read = await operator.request("chat.send", {
      sessionKey: TG_SESSION,
      text: "x",
      idempotencyKey: key,
    });
    expect(read.payload).toMatchObject({ status: "completed", text: answer });

    // So with a command answered at admission (its record is written by its answer, not by admission).
    const status = { sessionKey: TG_SESSION, text: "/status", idempotencyKey: "poster-status-1" };
    expect((await poster.request("chat.send", status)).ok).toBe(true);
    const statusText = (await poster.terminal("poster-status-1")).text;
    expect((await other.request("chat.send", status)).error?.code).toBe("forbidden");
    expect((await again.request("chat.send", status)).payload).toMatchObject({
      status: "completed",
      text: statusText,
    });
    for (const c of [poster, other, again, operator]) c.close();
  }, 30_000);

  it("a read-only client reads only its own session and gets no other session's events", async () => {
    const reader = await GatewayClient.open(world.hub.port, READER);
    expect((await reader.request("chat.history", { sessionKey: TG_SESSION })).error?.code).toBe("forbidden");
    const own = await reader.request("chat.history", {});
    expect(own.ok).toBe(true);
    expect((own.payload as { sessionKey: string }).sessionKey).toBe(
      "agent:main:webchat:direct:client%3Areader",
    );
    expect(
      (await reader.request("chat.send", { text: "hi", idempotencyKey: "reader-send-1" })).error?.code,
    ).toBe("forbidden");
    reader.close();
  });

  it("a client's default session is its own; reusing another session's idempotency key is refused", async () => {
    const owner = await GatewayClient.open(world.hub.port, world.hub.token);
    const sent = await owner.request("chat.send", {
      text: "owner says hi",
      idempotencyKey: "owner-key-12345",
    });
    expect(sent.ok).toBe(true);
    await owner.terminal("owner-key-12345");
    const writer = await GatewayClient.open(world.hub.port, WRITER);
    const stolen = await writer.request("chat.send", { text: "x", idempotencyKey: "owner-key-12345" });
    expect(stolen.error?.code).toBe("forbidden");
    expect(writer.chatEvents("owner-key-12345")).toHaveLength(0);
    const mine = await writer.request("chat.send", {
      text: "writer says hi",
      idempotencyKey: "writer-key-12345",
    });
    expect(mine.payload).toMatchObject({ sessionKey: "agent:main:webchat:direct:client%3Awriter" });
    expect(await writer.terminal("writer-key-12345")).toMatchObject({ state: "final" });
    owner.close();
    writer.close();
  });

  it("a client cannot take a future platform message's runId as its key: that message is still answered", async () => {
    const messageId = `future-${n++}`;
    const future = runIdForMessage(`telegram:default:1:${messageId}`);
    const writer = await GatewayClient.open(world.hub.port, WRITER);
    for (const key of [future, future.toUpperCase()]) {
      const taken = await writer.request("chat.send", { text: "claim it", idempotencyKey: key });
      expect(taken.error?.code).toBe("bad_params");
      expect(taken.error?.message).toMatch(/a version-8 UUID names a platform message's run here/);
    }
    world.model.script({ text: "Answered all the same." });
    const before = telegramText("1").length;
    const result = await world.hub.dispatcher!.dispatchInboundMessage({
      channel: "telegram",
      messageId,
      chat: { type: "direct", id: "1" },
      sender: { id: "1", name: "Tg User" },
      body: "my next message",
      timestamp: Date.now(),
    });
    expect(result).toMatchObject({ status: "accepted", runId: future });
    await waitFor(() => telegramText("1").length > before, "the Telegram answer");
    expect(telegramText("1").at(-1)?.text).toBe("Answered all the same.");
    writer.close();
  });

  it("the person asked approves in their own session without the approvals scope", async () => {
    const writer = await GatewayClient.open(world.hub.port, WRITER);
    world.model.script({ toolCalls: [{ name: "current_time", arguments: "{}" }] }, { text: "Done asking." });
    await writer.request("chat.send", { text: "time please", idempotencyKey: "writer-ask-1" });
    let code = "";
    await waitFor(() => {
      code =
        writer
          .chatEvents("writer-ask-1")
          .map((e) => /\/approve ([A-Z0-9]{6})/.exec(e.text)?.[1])
          .find(Boolean) ?? "";
      return code !== "";
    }, "the approval request");
    await writer.request("chat.send", { text: `/approve ${code}`, idempotencyKey: "writer-ask-approve" });
    expect(await writer.terminal("writer-ask-approve")).toMatchObject({ text: "Approved." });
    expect(await writer.terminal("writer-ask-1")).toMatchObject({ state: "final" });
    writer.close();
  }, 20_000);
});

describe("connecting with a proof of the token (connect.challenge)", () => {
  /** A new connection's nonce, and the connection. */
  async function challenged(): Promise<{ client: GatewayClient; nonce: string }> {
    const client = await GatewayClient.open(world.hub.port);
    const res = await client.request("connect.challenge");
    expect(res.ok).toBe(true);
    return { client, nonce: (res.payload as { nonce: string }).nonce };
  }

  it("the owner's and a client's proofs connect with their own scopes; the token itself is never sent", async () => {
    const owner = await challenged();
    const ownerConnect = await owner.client.request("connect", {
      auth: { proof: connectProof(world.hub.token, owner.nonce) },
    });
    expect(ownerConnect.ok).toBe(true);
    expect((await owner.client.request("channels.status")).ok).toBe(true);
    owner.client.close();
    const reader = await challenged();
    expect(
      (await reader.client.request("connect", { auth: { proof: connectProof(READER, reader.nonce) } })).ok,
    ).toBe(true);
    const send = await reader.client.request("chat.send", { text: "hi", idempotencyKey: "proof-reader-1" });
    expect(send.error?.code).toBe("forbidden");
    reader.client.close();
  });

  it("a wrong proof, a proof without a challenge, and a proof replayed on another connection are refused", async () => {
    const wrong = await challenged();
    const refused = await wrong.client.request("connect", {
      auth: { proof: connectProof("not-the-token-0123456789", wrong.nonce) },
    });
    expect(refused.error?.code).toBe("unauthorized");
    expect((await wrong.client.closed).code).toBe(4001);

    const unasked = await GatewayClient.open(world.hub.port);
    const noNonce = await unasked.request("connect", { auth: { proof: connectProof(world.hub.token, "x") } });
    expect(noNonce.error?.message).toBe(
      "A proof answers the nonce connect.challenge gave this connection; ask for one first.",
    );

    // A proof seen once (by whatever took the port) answers only the nonce it was made for.
    const first = await challenged();
    const proof = connectProof(world.hub.token, first.nonce);
    expect((await first.client.request("connect", { auth: { proof } })).ok).toBe(true);
    first.client.close();
    const second = await challenged();
    expect(second.nonce).not.toBe(first.nonce);
    expect((await second.client.request("connect", { auth: { proof } })).error?.code).toBe("unauthorized");
  });
});
