import { createHmac, randomBytes } from "node:crypto";

/**
 * A proof of the gateway token for `connect` that does not carry the token: HMAC-SHA256 of a nonce the
 * gateway handed out on this connection (`connect.challenge`), keyed with the token. The CLI connects this
 * way, so a program that took the gateway's port while the hub was down learns nothing it can use (the
 * proof answers its own nonce only, once).
 */
export function connectProof(token: string, nonce: string): string {
  return createHmac("sha256", token).update(`hub-gateway-connect\n${nonce}`).digest("base64url");
}

/** A fresh nonce for one connection's `connect.challenge` (256 random bits). */
export function connectNonce(): string {
  return randomBytes(32).toString("base64url");
}
