import type { IncomingMessage, ServerResponse } from "node:http";
import type { HttpRoute, HubConfig, ReplySink } from "@hub/core";
import type { PairingStore } from "@hub/dispatch";
import { type AuthFailureLimiter, checkBearer, TOO_MANY_FAILURES } from "@hub/gateway";
import { inspectMailbox, queueDepths } from "@hub/queue";
import { FailedDeliveries } from "@hub/reply";
import type { RunRecords, SessionStore } from "@hub/sessions";
import type { Redis } from "ioredis";
import { z } from "zod";
import { approvePairing } from "./pairing.js";
import { retrySendable } from "./sendable.js";
import type { ChannelReport } from "./supervisor.js";

/** What the control page reads and steers. */
export interface ControlDeps {
  token: string;
  /** The gateway's failed logins per address (guesses here count as at its `connect`). */
  authFailures: AuthFailureLimiter;
  redis: Redis;
  prefix: string;
  channels: () => ChannelReport[];
  /** The model runs start with (`agent.model`; a failover's choice is in /status). */
  model: string;
  runs: RunRecords;
  /** False when there is no such run. */
  stopRun: (runId: string) => Promise<boolean>;
  sessions: SessionStore;
  pairing: PairingStore;
  replies: ReplySink;
  /** The hub's config: a retry leaves a delivery to a target it cannot send to listed. */
  config: HubConfig;
}

const MAX_BODY = 16 * 1024;
/** The hub's mailboxes: reply targets' ordered delivery, and session lanes' runs. */
const MAILBOXES = ["reply", "runs"] as const;
const PairingParams = z.object({ channel: z.string().min(1), code: z.string().min(1) }).strict();
const StopParams = z.object({ runId: z.string().min(1) }).strict();
const RetryParams = z.object({ ids: z.array(z.string()).optional() }).strict();

/**
 * The control page's JSON API on the gateway (`/api/control/...`), for the
 * owner only: every request needs `Authorization: Bearer <gateway token>`.
 * Reads: channels, runs in flight, queue depths, failed deliveries, pending
 * pairings, sessions and one transcript. Actions: stop a run, approve or deny
 * a pairing, retry failed deliveries.
 */
export function controlRoutes(deps: ControlDeps): HttpRoute[] {
  const failed = new FailedDeliveries(deps.redis, deps.prefix);
  const get = (path: string, handle: (url: URL) => Promise<unknown>): HttpRoute => ({
    method: "GET",
    path,
    handle: guarded(deps, async (req) => handle(new URL(req.url ?? "/", "http://localhost"))),
  });
  const post = <T>(path: string, schema: z.ZodType<T>, handle: (body: T) => Promise<unknown>): HttpRoute => ({
    method: "POST",
    path,
    handle: guarded(deps, async (req) => handle(schema.parse(JSON.parse(await readBody(req))))),
  });
  return [
    get("/api/control/overview", async () => ({
      channels: deps.channels(),
      runs: (await deps.runs.running()).map((r) => ({
        ...r,
        model: deps.model,
        elapsedMs: Date.now() - r.startedAt,
      })),
      queueDepths: await queueDepths(deps.redis, deps.prefix),
      failedDeliveries: await failed.list(),
      pairing: await deps.pairing.list(),
      sessions: (await deps.sessions.list()).slice(0, 200),
    })),
    get("/api/control/queues", async () => ({
      mailboxes: await Promise.all(MAILBOXES.map((name) => inspectMailbox(deps.redis, deps.prefix, name))),
    })),
    get("/api/control/transcript", async (url) => {
      const key = url.searchParams.get("sessionKey") ?? "";
      const record = await deps.sessions.get(key);
      if (!record) throw new ControlError(404, `No session ${key}.`);
      return { ...record, entries: (await deps.sessions.read(record.sessionId)).slice(-200) };
    }),
    post("/api/control/runs/stop", StopParams, async ({ runId }) => {
      if (!(await deps.stopRun(runId)))
        throw new ControlError(404, `No run ${runId}: it never existed, or it ended long ago.`);
      return { runId, status: "abort_requested" };
    }),
    post("/api/control/pairing/approve", PairingParams, async ({ channel, code }) => {
      const approved = await approvePairing(deps.pairing, deps.replies, channel, code);
      if (!approved) throw new ControlError(404, `No pending pairing with code ${code} on ${channel}.`);
      return { channel, senderId: approved.senderId, status: "approved" };
    }),
    post("/api/control/pairing/deny", PairingParams, async ({ channel, code }) => {
      const denied = await deps.pairing.deny(channel, code);
      if (!denied) throw new ControlError(404, `No pending pairing with code ${code} on ${channel}.`);
      return { channel, senderId: denied.senderId, status: "denied" };
    }),
    post("/api/control/deliveries/retry", RetryParams, async ({ ids }) => {
      const { retried, skipped } = await retrySendable(failed, deps.replies, deps.config, ids);
      return { retried: retried.map((f) => f.id), skipped };
    }),
  ];
}

class ControlError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function guarded(
  { token, authFailures, config }: Pick<ControlDeps, "token" | "authFailures" | "config">,
  handle: (req: IncomingMessage) => Promise<unknown>,
) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const send = (status: number, body: unknown): void => {
      res
        .writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
        .end(JSON.stringify(body));
    };
    const verdict = checkBearer(req, token, authFailures, config.gateway.password);
    if (verdict !== "ok") {
      req.resume();
      if (verdict === "blocked") return send(429, { error: TOO_MANY_FAILURES });
      return send(401, { error: "Send Authorization: Bearer <gateway token or gateway.password>." });
    }
    try {
      send(200, await handle(req));
    } catch (error) {
      if (error instanceof ControlError) return send(error.status, { error: error.message });
      if (error instanceof z.ZodError) return send(400, { error: `Bad request: ${issuesSentence(error)}` });
      if (error instanceof SyntaxError) return send(400, { error: "Bad request: the body is not JSON." });
      throw error;
    }
  };
}

// "runId: expected string, received undefined; limit: too big" rather than zod's JSON list of issues.
function issuesSentence(error: z.ZodError): string {
  return `${error.issues.map((i) => `${i.path.join(".") || "the body"}: ${i.message}`).join("; ")}.`;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new ControlError(413, "The request body is too large.");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8") || "{}";
}
