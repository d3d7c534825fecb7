import type { IncomingMessage, ServerResponse } from "node:http";
import { type HttpRoute, sameSecret } from "@hub/core";
import type { AuthFailureLimiter } from "./auth-limiter.js";

/** Whether the hub can take work now, and if not, why (one sentence per reason). */
export interface Readiness {
  ready: boolean;
  reasons: string[];
}

/** `GET /readyz`: 200 when ready, else 503 with the reasons (JSON either way). */
export function readinessRoute(check: () => Promise<Readiness>): HttpRoute {
  return {
    method: "GET",
    path: "/readyz",
    handle: async (_req, res) => {
      const readiness = await check();
      json(res, readiness.ready ? 200 : 503, readiness);
    },
  };
}

/** Who may read `/metrics`: loopback clients only, or anyone with the bearer token. */
export type MetricsAccess = { kind: "loopback" } | { kind: "token"; token: string };

/** `GET /metrics`: the Prometheus text exposition, guarded as configured. */
export function metricsRoute(
  render: () => Promise<string>,
  access: MetricsAccess,
  failures: AuthFailureLimiter,
): HttpRoute {
  return {
    method: "GET",
    path: "/metrics",
    handle: async (req, res) => {
      if (access.kind === "loopback" && !isLoopbackAddress(req.socket.remoteAddress)) {
        res
          .writeHead(403, { "content-type": "text/plain" })
          .end("metrics are served to loopback clients only\n");
        return;
      }
      const verdict = access.kind === "token" ? checkBearer(req, access.token, failures) : "ok";
      if (verdict !== "ok") {
        res
          .writeHead(verdict === "blocked" ? 429 : 401, {
            "content-type": "text/plain",
            "www-authenticate": "Bearer",
          })
          .end(
            verdict === "blocked" ? `${TOO_MANY_FAILURES}\n` : "send Authorization: Bearer <metrics token>\n",
          );
        return;
      }
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(await render());
    },
  };
}

/**
 * A webhook route that answers 503 with Retry-After while the hub drains, so
 * the platform keeps the update and redelivers it (to this hub after its
 * restart, or to a sibling).
 */
export function drainGuard(route: HttpRoute, draining: () => boolean): HttpRoute {
  return {
    ...route,
    handle: async (req, res) => {
      if (!draining()) return route.handle(req, res);
      req.resume();
      res
        .writeHead(503, { "retry-after": "5", "content-type": "text/plain" })
        .end("the hub is restarting; retry\n");
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res
    .writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
    .end(JSON.stringify(body));
}

function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  return address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.");
}

/** What an HTTP client whose failed logins are used up is told. */
export const TOO_MANY_FAILURES = "Too many failed logins from this address; wait a minute and try again.";

/**
 * Checks a request's bearer token against the per-address limit on failed logins that the
 * gateway's `connect` uses, so guesses over HTTP count too: `blocked` while the address has used
 * its failures up (the right token too), `wrong` for a wrong token (counted; a request without an
 * Authorization header guessed nothing and is not), `ok` otherwise.
 */
export function checkBearer(
  req: IncomingMessage,
  token: string,
  failures: AuthFailureLimiter,
  /** The owner's password (`gateway.password`), taken where the token goes. */
  password?: string,
): "ok" | "wrong" | "blocked" {
  const address = req.socket.remoteAddress ?? "?";
  if (failures.blocked(address)) return "blocked";
  const byToken = bearerMatches(req, token);
  if (byToken || (password !== undefined && bearerMatches(req, password))) return "ok";
  if (req.headers.authorization !== undefined) failures.fail(address);
  return "wrong";
}

/** Whether the request carries `Authorization: Bearer <token>` (compared in constant time, its length too). */
export function bearerMatches(req: IncomingMessage, token: string): boolean {
  const header = req.headers.authorization ?? "";
  return header.startsWith("Bearer ") && sameSecret(header.slice(7), token);
}
