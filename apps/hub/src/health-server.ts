import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { AuthFailureLimiter, listenError } from "@hub/gateway";
import type { HubBase } from "./stages/base.js";

/** Where a process answers its probes: its gateway's address, or its health listener's. */
export interface ProbeAddress {
  host: string;
  port: number;
}

/** The listener's settings, named in an error about its address. */
const HEALTH_LISTENER = {
  name: "health",
  subject: "The health listener",
  host: "HUB_HEALTH_HOST (or health.host)",
  port: "HUB_HEALTH_PORT (or health.port)",
};

/**
 * A process without the `ingress` role has no gateway, so it answers its probes here (`health.host`,
 * `health.port`): `GET /healthz` (200 while it runs), `GET /readyz` (this process's readiness: not
 * draining, Redis answers, its roles' workers take work) and `/metrics` as the gateway serves them.
 * It is closed last, after the workers, like the gateway.
 */
export async function startHealthServer(base: HubBase, gatewayToken: string): Promise<ProbeAddress> {
  const { host, port } = base.config.health;
  const routes = base.operations.routes([], () => [], gatewayToken, new AuthFailureLimiter());
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const route = routes.find((r) => r.method === req.method && r.path === path);
    if (route)
      return void Promise.resolve(route.handle(req, res)).catch((error: unknown) => {
        base.logger.error({ err: error }, "health listener request failed");
        if (!res.headersSent) res.writeHead(500).end();
      });
    req.resume();
    if (req.method === "GET" && path === "/healthz")
      return void res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
    res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(listenError(error, host, port, HEALTH_LISTENER)),
    );
    server.listen(port, host, () => resolve());
  });
  base.shutdown.rest.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return { host, port: (server.address() as AddressInfo).port };
}
