// An agent thread of a hub process (`agent.threads`; started by agent-threads.ts): the `agent` role on a
// thread of its own, so another core runs the turns while the main thread does ingress and delivery. It
// shares nothing with the main thread but Redis and the state directory, as an `agent` process would, and
// answers the main thread's questions (metrics, runs in flight, readiness, reload, stop).
import { writeSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { createLogger, describeError, type HubLogger, SecretRedactor } from "@hub/core";
import { type ClaimedKey, WorkerRoom } from "@hub/queue";
import type {
  AgentThreadData,
  AgentThreadMessage,
  AgentThreadRequest,
  ToAgentThread,
} from "./agent-thread-messages.js";
import { type AgentThreadRole, startAgentThreadRole } from "./hub.js";
import { logLibraryWarnings } from "./library-warnings.js";
import { channelPlugins, configSecrets } from "./plugins.js";

const port = parentPort;
if (!port)
  throw new Error("agent-thread runs as a worker thread of a hub process; set agent.threads instead");
const data = workerData as AgentThreadData;
const post = (message: AgentThreadMessage) => port.postMessage(message);

try {
  const logger = threadLogger(data);
  // What a library prints in this thread is a log line too, not text through the main thread's stdout.
  logLibraryWarnings(logger);
  // Its replies' pushes claim idle targets for the main thread's delivery, which takes each one posted.
  const room = data.deliveryRoom;
  const remoteDelivery = room
    ? {
        room: new WorkerRoom(room, data.deliveryHolds),
        claimed: (claim: ClaimedKey) => post({ kind: "claimed", claim }),
      }
    : undefined;
  // That delivery tells it the settlements of the replies it waits for.
  const settleRelay = room
    ? {
        waiting: (replyId: string) => post({ kind: "waiting", replyId }),
        done: (replyId: string) => post({ kind: "done", replyId }),
      }
    : undefined;
  const role = await startAgentThreadRole(data.config, {
    stateDir: data.stateDir,
    logger,
    remoteDelivery,
    settleRelay,
    laneRoom: new WorkerRoom(data.laneRoom),
  });
  port.on("message", (request: AgentThreadRequest | ToAgentThread) => {
    if ("kind" in request) return posted(role, request);
    void Promise.resolve(request)
      .then((asked) => answer(role, asked))
      .then(
        (value: unknown) => post({ kind: "answer", id: request.id, value }),
        (error: unknown) => post({ kind: "answer", id: request.id, value: { error: describeError(error) } }),
      );
  });
  post({ kind: "ready" });
} catch (error) {
  post({ kind: "failed", error: describeError(error) });
}

// A session the main thread's admission claimed for this thread's runner starts at once; a settlement wakes
// the waits for its reply.
function posted(role: AgentThreadRole, message: ToAgentThread): void {
  if (message.kind === "session") role.takeSession(message.claim);
  else role.settledElsewhere(message.replyId, message.settlement);
}

function answer(role: AgentThreadRole, request: AgentThreadRequest): unknown {
  const { operations } = role;
  switch (request.ask) {
    case "metrics":
      return operations.metrics.registry.getMetricsAsJSON();
    case "runs":
      return operations.metrics.inFlight();
    case "running":
      return role.running();
    case "reload":
      return operations.reload(data.configPath, channelPlugins);
    case "stop":
      // What it could not finish by then: the main thread's last log line counts them.
      return role.stop(request.by).then(() => operations.metrics.inFlight());
  }
}

// The main thread's level; its own lines go straight to standard output (or the file the main thread opened),
// not through the main thread, with `thread` on each and the same secrets redacted.
function threadLogger({ config, token, index, log }: AgentThreadData): HubLogger {
  const secrets = new SecretRedactor([...configSecrets(config), token]);
  const { fd } = log;
  const destination = fd === undefined ? undefined : { write: (line: string) => void writeSync(fd, line) };
  return createLogger({ level: log.level, secrets, ...(destination ? { destination } : {}) }).child({
    thread: index,
  });
}
