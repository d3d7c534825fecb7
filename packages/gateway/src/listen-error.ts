import { HubError } from "@hub/core";

/**
 * The error the gateway's `listen` failed with, as a `HubError` saying what to
 * set when the cause is the host or port the operator chose (in use, an
 * address this machine does not have, a port it may not open); other errors
 * are returned as they are.
 */
export function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  if (error.code === "EADDRINUSE")
    return new HubError(
      "gateway_port_in_use",
      `Port ${port} on ${host} is already in use; stop the other program or set HUB_GATEWAY_PORT (or gateway.port) to a free port.`,
      { cause: error },
    );
  if (error.code === "EADDRNOTAVAIL")
    return new HubError(
      "gateway_host_unavailable",
      `The gateway cannot listen on ${host}: no network interface of this machine has that address; set HUB_GATEWAY_HOST (or gateway.host) to one of its addresses, 127.0.0.1 for this machine only, or 0.0.0.0 for all of them.`,
      { cause: error },
    );
  if (error.code === "EACCES")
    return new HubError(
      "gateway_port_forbidden",
      `The gateway is not allowed to listen on port ${port} of ${host} (ports below 1024 need root or the CAP_NET_BIND_SERVICE capability); set HUB_GATEWAY_PORT (or gateway.port) to a port from 1024 to 65535, or grant the capability.`,
      { cause: error },
    );
  return error;
}
