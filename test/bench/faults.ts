// `npm run bench:faults`: the fault runs at scale (the CI runs them small in test/faults/faults.test.ts).
// Real processes, real Redis, fake platforms. Prints what the platform saw; exits 1 when anything was
// lost or out of order. Sizes: FAULTS_CHATS (1000) targets x 5 segments with delivery workers
// SIGKILLed every 0.5-2 s; FAULTS_REDIS_CHATS (500) targets through a Redis (AOF) restart;
// FAULTS_HUB_CHATS (50) chats x FAULTS_HUB_MESSAGES (4) messages through FAULTS_HUB_KILLS (3) SIGKILLs
// of the whole hub. A size of 0 skips that run.
import { deliveryFaultRun } from "../faults/delivery.js";
import { hubCrashRun } from "../faults/hub-crash.js";
import { benchEnv as env } from "./meter.js";

async function killedWorkers(chats: number): Promise<boolean> {
  console.log(`delivery workers SIGKILLed at random moments: ${chats} targets x 5 segments, 4 workers`);
  const r = await deliveryFaultRun({
    chats,
    segments: 5,
    workers: 4,
    killEveryMs: [500, 2000],
    leaseMs: 1500,
    // A platform answering in 250 ms keeps the load running for several kills (delivery alone is fast).
    sendDelayMs: 250,
    timeoutMs: 900_000,
  });
  console.log(
    `  ${r.segments} segments in ${r.seconds.toFixed(1)} s, ${r.kills} kills: lost ${r.lost}, ` +
      `out of order ${r.outOfOrder}, duplicates ${r.duplicates}, failed ${r.failed}`,
  );
  return r.lost > 0 || r.outOfOrder > 0;
}

async function restartedRedis(chats: number): Promise<boolean> {
  console.log(
    `Redis (AOF, appendfsync always) SIGKILLed and restarted mid-load: ${chats} targets x 5 segments`,
  );
  const r = await deliveryFaultRun({
    chats,
    segments: 5,
    workers: 3,
    restartRedisAfterMs: 500,
    // Sends of 50 ms keep the load running well past the restart (with no delay it can end before it).
    sendDelayMs: 50,
    timeoutMs: 900_000,
  });
  console.log(
    `  ${r.segments} segments in ${r.seconds.toFixed(1)} s, ${r.redisRestarts} restart: ` +
      `lost ${r.lost}, out of order ${r.outOfOrder}, duplicates ${r.duplicates}, failed ${r.failed}`,
  );
  return r.lost > 0 || r.outOfOrder > 0 || r.redisRestarts !== 1;
}

async function crashedHub(
  hub: { chats: number; messagesPerChat: number; kills: number },
  sessionStore: "files" | "redis",
): Promise<boolean> {
  console.log(
    `the whole hub SIGKILLed mid-run and restarted, sessions in ${sessionStore}: ${hub.chats} chats x ` +
      `${hub.messagesPerChat} messages, ${hub.kills} kills`,
  );
  const r = await hubCrashRun({ ...hub, sessionStore, timeoutMs: 900_000 });
  console.log(
    `  ${r.messages} messages in ${r.seconds.toFixed(1)} s: answered once ${r.answered}, answered twice ` +
      `${r.answeredTwice} (${r.extraCopies} extra copies; ${r.twiceAfterResume} of them resumed runs, the rest ` +
      `sends in flight at a kill), recorded failures ${r.recordedFailures}, lost ${r.lost}`,
  );
  return r.lost > 0;
}

const hub = {
  chats: env("FAULTS_HUB_CHATS", 50),
  messagesPerChat: env("FAULTS_HUB_MESSAGES", 4),
  kills: env("FAULTS_HUB_KILLS", 3),
};
let bad = false;
if (env("FAULTS_CHATS", 1000) > 0) bad = (await killedWorkers(env("FAULTS_CHATS", 1000))) || bad;
if (env("FAULTS_REDIS_CHATS", 500) > 0) bad = (await restartedRedis(env("FAULTS_REDIS_CHATS", 500))) || bad;
// Transcripts and indexes in the state dir's files (the default), then in Redis (`sessions.store`).
if (hub.chats > 0)
  for (const store of ["files", "redis"] as const) bad = (await crashedHub(hub, store)) || bad;
process.exit(bad ? 1 : 0);
