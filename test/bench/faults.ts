// `npm run bench:faults`: the fault runs at scale (the CI runs them small in test/faults/faults.test.ts).
// Real processes, real Redis, fake platforms. Prints what the platform saw; exits 1 when anything was
// lost or out of order. Sizes: FAULTS_CHATS (1000) targets x 5 segments with delivery workers
// SIGKILLed every 0.5-2 s; FAULTS_REDIS_CHATS (500) targets through a Redis (AOF) restart;
// FAULTS_HUB_CHATS (50) chats x FAULTS_HUB_MESSAGES (4) messages through FAULTS_HUB_KILLS (3) SIGKILLs of the whole hub.
import { deliveryFaultRun } from "../faults/delivery.js";
import { hubCrashRun } from "../faults/hub-crash.js";

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
let bad = false;

const chats = env("FAULTS_CHATS", 1000);
console.log(`delivery workers SIGKILLed at random moments: ${chats} targets x 5 segments, 4 workers`);
const killed = await deliveryFaultRun({
  chats,
  segments: 5,
  workers: 4,
  killEveryMs: [500, 2000],
  leaseMs: 1500,
  timeoutMs: 900_000,
});
console.log(
  `  ${killed.segments} segments in ${killed.seconds.toFixed(1)} s, ${killed.kills} kills: lost ${killed.lost}, ` +
    `out of order ${killed.outOfOrder}, duplicates ${killed.duplicates}, failed ${killed.failed}`,
);
bad ||= killed.lost > 0 || killed.outOfOrder > 0;

const redisChats = env("FAULTS_REDIS_CHATS", 500);
console.log(
  `Redis (AOF, appendfsync always) SIGKILLed and restarted mid-load: ${redisChats} targets x 5 segments`,
);
const restarted = await deliveryFaultRun({
  chats: redisChats,
  segments: 5,
  workers: 3,
  restartRedisAfterMs: 500,
  sendDelayMs: 5,
  timeoutMs: 900_000,
});
console.log(
  `  ${restarted.segments} segments in ${restarted.seconds.toFixed(1)} s, ${restarted.redisRestarts} restart: ` +
    `lost ${restarted.lost}, out of order ${restarted.outOfOrder}, duplicates ${restarted.duplicates}, failed ${restarted.failed}`,
);
bad ||= restarted.lost > 0 || restarted.outOfOrder > 0 || restarted.redisRestarts !== 1;

const hub = {
  chats: env("FAULTS_HUB_CHATS", 50),
  messagesPerChat: env("FAULTS_HUB_MESSAGES", 4),
  kills: env("FAULTS_HUB_KILLS", 3),
};
console.log(
  `the whole hub SIGKILLed mid-run and restarted: ${hub.chats} chats x ${hub.messagesPerChat} messages, ${hub.kills} kills`,
);
const crashed = await hubCrashRun({ ...hub, timeoutMs: 900_000 });
console.log(
  `  ${crashed.messages} messages in ${crashed.seconds.toFixed(1)} s: answered once ${crashed.answered}, ` +
    `answered twice ${crashed.answeredTwice} (${crashed.extraCopies} extra copies), recorded failures ${crashed.recordedFailures}, lost ${crashed.lost}`,
);
bad ||= crashed.lost > 0;

process.exit(bad ? 1 : 0);
