import { createHmac } from "node:crypto";
import { sameHmacSha256 } from "@hub/core";

/** Slack refuses requests older than this; so do we (replay protection). */
export const MAX_REQUEST_AGE_SECONDS = 5 * 60;

/** The headers Slack signs a request with. */
export interface SlackSignatureHeaders {
  signature: string | undefined;
  timestamp: string | undefined;
}

/** `v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<raw body>` with the signing secret: how Slack signs. */
export function slackSignature(signingSecret: string, timestamp: string | number, rawBody: string): string {
  return `v0=${createHmac("sha256", signingSecret).update(`v0:${timestamp}:${rawBody}`).digest("hex")}`;
}

/**
 * Checks a request's `X-Slack-Signature` against the body and `X-Slack-Request-Timestamp`.
 * Returns why it fails (missing, stale, mismatch) or undefined when it is Slack's. The comparison
 * is constant-time; a timestamp more than 5 minutes away from now (either way) fails.
 */
export function verifySlackSignature(
  signingSecret: string,
  headers: SlackSignatureHeaders,
  rawBody: string,
  nowMs = Date.now(),
): string | undefined {
  const { signature, timestamp } = headers;
  if (!signature || !timestamp) return "missing X-Slack-Signature or X-Slack-Request-Timestamp";
  if (!/^\d{1,12}$/.test(timestamp)) return "malformed X-Slack-Request-Timestamp";
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > MAX_REQUEST_AGE_SECONDS) {
    return "X-Slack-Request-Timestamp is more than 5 minutes away from now (a replay, or a wrong clock)";
  }
  if (!signature.startsWith("v0=")) return "unknown signature version";
  if (!sameHmacSha256(signingSecret, `v0:${timestamp}:${rawBody}`, signature.slice(3)))
    return "signature mismatch";
  return undefined;
}
