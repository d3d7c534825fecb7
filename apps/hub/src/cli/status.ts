import { HubError, type HubRole } from "@hub/core";
import { queueDepths } from "@hub/queue";
import { FailedDeliveries } from "@hub/reply";
import { RunRecords } from "@hub/sessions";
import type { Command } from "commander";
import { type LiveProcess, liveProcesses, missingRoles } from "../process-registry.js";
import type { ChannelReport } from "../supervisor.js";
import { channelLine } from "./channel-line.js";
import { configOf, gatewayAddress, output, via, withRedis } from "./context.js";
import { callGateway, GatewayUnreachableError, GatewayUnresponsiveError } from "./gateway-client.js";

/** What `hub status` reports. */
export interface HubStatus {
  /** Whether a hub answered on the gateway (channel states come only from a running hub). */
  running: boolean;
  channels: ChannelReport[];
  runsInFlight: Array<{ runId: string; sessionKey: string; startedAt: number }>;
  queueDepths: Record<string, number>;
  failedDeliveries: number;
  /** The installation's running processes and their roles (from Redis: any machine's). */
  processes: LiveProcess[];
  /** Roles no running process has: what their queues hold waits. */
  missingRoles: HubRole[];
  /** Why Redis could not be read (runs, queues and failed deliveries are then unknown). */
  redisError?: string;
}

/** `hub status [--json]`: channel states from the running hub's gateway, runs and queues from Redis. */
export function registerStatus(program: Command): void {
  program
    .command("status")
    .description(
      "channels with their state and last error (from the running hub's gateway), runs in flight, queue depths and failed deliveries (from Redis)",
    )
    .option("--json", "print JSON")
    .action(async (_opts, command: Command) => {
      const { config } = configOf(command);
      const address = gatewayAddress(config);
      via(
        `gateway ${config.gateway.host}:${address.port} with ${address.tokenSource}, and Redis ${config.redis.prefix}:*`,
      );
      const status = await readStatus(command);
      output(command, status, () => formatStatus(status));
      // The channels are shown whatever Redis does; a Redis that does not answer is still a failure.
      if (status.redisError) {
        console.error(`hub: ${status.redisError}`);
        process.exitCode = 1;
      } else if (!status.running && status.processes.length === 0) {
        // As an init script's status: 3 is "not running", so `hub status` can gate a script or a probe.
        console.error('hub: no hub process is running; start one with "npm start".');
        process.exitCode = 3;
      }
    });
}

async function readStatus(command: Command): Promise<HubStatus> {
  const { config } = configOf(command);
  let running = true;
  let channels: ChannelReport[] = [];
  try {
    const [answer] = await callGateway(gatewayAddress(config), [{ method: "channels.status" }]);
    channels = (answer as { channels: ChannelReport[] }).channels;
  } catch (error) {
    if (!(error instanceof GatewayUnreachableError || error instanceof GatewayUnresponsiveError)) throw error;
    running = false;
  }
  try {
    return await withRedis(config, async (redis) => {
      const prefix = config.redis.prefix;
      const runs = await new RunRecords(redis, prefix).running();
      const processes = await liveProcesses(redis, prefix);
      return {
        running,
        channels,
        processes,
        missingRoles: missingRoles(processes),
        runsInFlight: runs.map((r) => ({ runId: r.runId, sessionKey: r.sessionKey, startedAt: r.startedAt })),
        queueDepths: await queueDepths(redis, prefix),
        failedDeliveries: await new FailedDeliveries(redis, prefix).count(),
      };
    });
  } catch (error) {
    if (!(error instanceof HubError && error.code === "redis_unreachable")) throw error;
    const unknown = {
      runsInFlight: [],
      queueDepths: {},
      failedDeliveries: 0,
      processes: [],
      missingRoles: [],
    };
    return { running, channels, ...unknown, redisError: error.message };
  }
}

// What waits while no process has a role.
const ROLE_WAITS: Record<HubRole, string> = {
  ingress: "no channel is connected and the web chat is down",
  agent: "the runs queue waits",
  delivery: "the reply queue waits",
};

function formatStatus(s: HubStatus): string {
  const lines = [s.running ? "Hub: running" : "Hub: not answering on its gateway (channel states unknown)"];
  for (const c of s.channels) lines.push(`  ${channelLine(c)}`);
  if (s.redisError) {
    lines.push("Runs in flight, queues and failed deliveries: unknown (Redis does not answer)");
    return lines.join("\n");
  }
  lines.push(`Processes: ${s.processes.length}`);
  for (const p of s.processes) lines.push(`  ${p.host} pid ${p.pid}: ${p.roles.join(", ")}`);
  for (const role of s.missingRoles)
    lines.push(
      `  no running process has the ${role} role: ${ROLE_WAITS[role]}; start one (HUB_ROLES=${role}).`,
    );
  lines.push(`Runs in flight: ${s.runsInFlight.length}`);
  for (const r of s.runsInFlight)
    lines.push(`  ${r.runId}  ${r.sessionKey}  ${Math.round((Date.now() - r.startedAt) / 1000)} s`);
  lines.push(
    `Queues: ${Object.entries(s.queueDepths)
      .map(([q, n]) => `${q} ${n}`)
      .join(", ")}`,
  );
  lines.push(
    `Failed deliveries: ${s.failedDeliveries}${s.failedDeliveries ? ' (see "hub deliveries failed")' : ""}`,
  );
  return lines.join("\n");
}
