import { HubError } from "@hub/core";

/** Which listener failed, and the settings that choose its address (named in the error). */
export interface ListenerSettings {
  /** Its name in the sentence and the error code, e.g. `gateway` or `health`. */
  name: string;
  /** What the sentence calls it, e.g. `The gateway`. */
  subject: string;
  host: string;
  port: string;
}

/** The gateway's: `HUB_GATEWAY_HOST` / `HUB_GATEWAY_PORT`. */
export const GATEWAY_LISTENER: ListenerSettings = {
  name: "gateway",
  subject: "The gateway",
  host: "HUB_GATEWAY_HOST (or gateway.host)",
  port: "HUB_GATEWAY_PORT (or gateway.port)",
};

/**
 * The error a listener's `listen` failed with, as a `HubError` saying what to
 * set when the cause is the host or port the operator chose (in use, an
 * address this machine does not have, a port it may not open); other errors
 * are returned as they are.
 */
export function listenError(
  error: NodeJS.ErrnoException,
  host: string,
  port: number,
  settings: ListenerSettings = GATEWAY_LISTENER,
): Error {
  const { name, subject } = settings;
  if (error.code === "EADDRINUSE")
    return new HubError(
      `${name}_port_in_use`,
      `Port ${port} on ${host} is already in use; stop the other program or set ${settings.port} to a free port.`,
      { cause: error },
    );
  if (error.code === "EADDRNOTAVAIL")
    return new HubError(
      `${name}_host_unavailable`,
      `${subject} cannot listen on ${host}: no network interface of this machine has that address; set ${settings.host} to one of its addresses, 127.0.0.1 for this machine only, or 0.0.0.0 for all of them.`,
      { cause: error },
    );
  if (error.code === "EACCES")
    return new HubError(
      `${name}_port_forbidden`,
      `${subject} is not allowed to listen on port ${port} of ${host} (ports below 1024 need root or the CAP_NET_BIND_SERVICE capability); set ${settings.port} to a port from 1024 to 65535, or grant the capability.`,
      { cause: error },
    );
  return error;
}
