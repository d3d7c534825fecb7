import { deriveSessionKey, normalizeText, sameSecret } from "@hub/core";
import { parseCommand } from "@hub/dispatch";
import { connectProof } from "./connect-proof.js";
import type { METHODS } from "./protocol.js";

/**
 * What a gateway client may do: `read` (history, health, live events),
 * `write` (send, abort), `approvals` (answer tool approvals asked of someone
 * else), `pairing` (list and approve pairing codes), `admin` (every session,
 * like the owner).
 */
export type Scope = "read" | "write" | "admin" | "approvals" | "pairing";
/** Every scope: the owner's token and password have them all. */
export const ALL_SCOPES: readonly Scope[] = ["read", "write", "admin", "approvals", "pairing"];

/** The scope each method needs; total over the protocol's methods, so a new method cannot go unchecked. */
export const METHOD_SCOPES: Readonly<Record<(typeof METHODS)[number], Scope>> = {
  health: "read",
  "chat.history": "read",
  "chat.send": "write",
  "chat.abort": "write",
  "channels.status": "read",
  "pairing.list": "pairing",
  "pairing.approve": "pairing",
};

/** A gateway client as configured: its token, its scopes, and the sessions it may touch besides its own. */
export interface GatewayClientGrant {
  name: string;
  token: string;
  scopes: readonly Scope[];
  /** Session keys (exact, `prefix*`, or `*`) besides its own web chat sessions. */
  sessions?: readonly string[] | undefined;
}

/** Who is on a connection, once authenticated, and what they may touch. */
export interface Principal {
  /** `owner` for the owner's token or password, else the client's configured name. */
  name: string;
  owner: boolean;
  scopes: readonly Scope[];
  /** This principal's own web chat session (the default of chat.send and chat.history). */
  ownSessionKey: string;
  /** The sender id its messages carry. */
  senderId: string;
  /** Extra session patterns (exact, `prefix*`, `*`). */
  sessions: readonly string[];
}

/** What authentication is checked against. */
export interface Credentials {
  token: string;
  password?: string | undefined;
  clients?: ReadonlyArray<GatewayClientGrant> | undefined;
  agentId: string;
  /** The owner's own web chat session key. */
  ownerSessionKey: string;
  /** The nonce `connect.challenge` gave this connection, which a `proof` answers (single use). */
  nonce?: string | undefined;
}

/** A client's own web chat session: its own DM on the web chat channel, whatever `dmScope` says. */
export function clientSessionKey(agentId: string, clientName: string): string {
  return deriveSessionKey({
    agentId,
    channel: "webchat",
    chatType: "direct",
    chatId: `client:${clientName}`,
    peerId: `client:${clientName}`,
    dmScope: "per-channel-peer",
  });
}

/**
 * The principal a connect's credentials name, or undefined when they match
 * nothing. Every token is compared (in constant time), so timing does not
 * reveal which client matched.
 */
export function authenticate(
  auth: { token: string } | { password: string } | { proof: string },
  c: Credentials,
): Principal | undefined {
  const owner: Principal = {
    name: "owner",
    owner: true,
    scopes: ALL_SCOPES,
    ownSessionKey: c.ownerSessionKey,
    senderId: "owner",
    sessions: ["*"],
  };
  if ("password" in auth) return c.password && sameSecret(auth.password, c.password) ? owner : undefined;
  // A proof without a nonce given out on this connection proves nothing.
  if ("proof" in auth && c.nonce === undefined) return undefined;
  const nonce = c.nonce ?? "";
  const holds = (token: string) =>
    "proof" in auth ? sameSecret(auth.proof, connectProof(token, nonce)) : sameSecret(auth.token, token);
  let found: Principal | undefined;
  if (holds(c.token)) found = owner;
  // The password where a token goes: every client (the web chat's login, a Bearer header) takes it as typed.
  if ("token" in auth && c.password && sameSecret(auth.token, c.password)) found = owner;
  for (const client of c.clients ?? []) {
    if (!holds(client.token) || found) continue;
    found = {
      name: client.name,
      owner: false,
      scopes: client.scopes,
      ownSessionKey: clientSessionKey(c.agentId, client.name),
      senderId: `client:${client.name}`,
      sessions: client.scopes.includes("admin") ? ["*"] : (client.sessions ?? []),
    };
  }
  return found;
}

/** Whether the principal's own web chat session is this one (or a thread under it). */
export function isOwnSession(p: Principal, sessionKey: string): boolean {
  return sessionKey === p.ownSessionKey || sessionKey.startsWith(`${p.ownSessionKey}:`);
}

/** Whether the principal may read, write to, or be told about this session. */
export function mayTouchSession(p: Principal, sessionKey: string): boolean {
  if (isOwnSession(p, sessionKey)) return true;
  return p.sessions.some((pattern) =>
    pattern.endsWith("*") ? sessionKey.startsWith(pattern.slice(0, -1)) : sessionKey === pattern,
  );
}

/** Why this principal may not send `text` into `sessionKey`, or undefined when it may. */
export function sendRefusal(p: Principal, sessionKey: string, text: string): string | undefined {
  if (!mayTouchSession(p, sessionKey))
    return `This client may not use the session ${sessionKey}; list it under gateway.clients[].sessions.`;
  // Read as admission reads it: control characters it strips must not hide a command from this check.
  const command = parseCommand(normalizeText(text));
  // Approving a tool call is for the person asked (in their own session) or a holder of `approvals`.
  if (
    (command?.name === "approve" || command?.name === "deny") &&
    !isOwnSession(p, sessionKey) &&
    !p.scopes.includes("approvals")
  )
    return `Answering tool approvals in ${sessionKey} needs the "approvals" scope.`;
  return undefined;
}
