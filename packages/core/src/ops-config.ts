import { z } from "zod";

/** `metrics`: the Prometheus endpoint `/metrics` on the gateway's port. */
export const MetricsConfigSchema = z
  .object({
    enabled: z.boolean().default(true),
    /**
     * Who may read it: `loopback` (only requests from 127.0.0.1/::1, the default) or `token`
     * (any address with `Authorization: Bearer <metrics.token, else the gateway token>`).
     */
    access: z.enum(["loopback", "token"]).default("loopback"),
    /** A token only for scrapers (instead of the gateway token) when `access` is `token`. */
    token: z.string().min(16, "must be at least 16 characters").optional(),
  })
  .strict()
  .prefault({});

/**
 * `health`: where a process without the `ingress` role (it has no gateway) answers `/healthz`,
 * `/readyz` and `/metrics`. Loopback on a port the system picks by default: the Docker health
 * check finds it in the state directory, and several such processes on one machine never collide.
 */
export const HealthConfigSchema = z
  .object({
    /** The address it listens on (`0.0.0.0` for a probe from another machine or container). */
    host: z.string().min(1).default("127.0.0.1"),
    /** Its port; 0 (the default) lets the system pick a free one. */
    port: z.number().int().min(0).max(65535).default(0),
  })
  .strict()
  .prefault({});

/** `lifecycle`: how the hub stops. */
export const LifecycleConfigSchema = z
  .object({
    /** On SIGTERM, how long running runs may take to finish (seconds) before they are left for restart recovery. */
    drainSeconds: z.number().int().min(0).default(60),
  })
  .strict()
  .prefault({});
