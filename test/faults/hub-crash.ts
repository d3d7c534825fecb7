// Fault run of the whole hub (issue 16), shared by the CI-sized test and `npm run bench:faults`: a real
// hub process (every role) answers chats on a fake Telegram with the offline model and is SIGKILLed
// mid-run, then started again on the same state directory; every message the platform took must end
// with an answer or a recorded failure.
import { runIdForMessage } from "@hub/core";
import { Redis } from "ioredis";
import { type FakeTelegram, privateText, startFakeTelegram } from "../fakes/src/index.js";
import { installation } from "../support/installation.js";
import { REDIS_URL } from "../support/redis.js";
import { fakeTelegramChannel } from "../support/telegram-channel.js";

/** The shape of a hub crash run. */
export interface HubCrashOptions {
  chats: number;
  messagesPerChat: number;
  /** SIGKILLs of the whole hub, spread over the run (each followed by a restart). */
  kills: number;
  /** The offline model's pause per word (ms), so a kill lands inside runs. */
  tokenDelayMs?: number;
  timeoutMs?: number;
  /** `sessions.store`: transcripts and indexes in the state dir's files (default) or in Redis. */
  sessionStore?: "files" | "redis";
}

/** What became of every message. */
export interface HubCrashResult {
  messages: number;
  /** Messages with exactly one answer. */
  answered: number;
  /** Messages whose answer arrived more than once (the send-then-crash window), and the extra copies. */
  answeredTwice: number;
  /** Of those, messages whose run was resumed after a kill (the rest: a send in flight at the kill). */
  twiceAfterResume: number;
  extraCopies: number;
  /** Messages with no answer whose run ended with a recorded failure. */
  recordedFailures: number;
  /** Messages with neither: lost. */
  lost: number;
  /** Sends that timed out with their outcome unknown (each is retried once: a second copy if it had landed). */
  unknownSendOutcomes: number;
  kills: number;
  seconds: number;
}

const FAILED = new Set(["failed", "interrupted", "timed_out", "aborted"]);

interface Sent {
  chat: number;
  messageId: number;
  text: string;
}

function answersTo(telegram: FakeTelegram, m: Sent): number {
  const said = new RegExp(`You said: ${m.text}\\b`);
  return telegram.sent(m.chat).filter((s) => said.test(String(s.text))).length;
}

async function outcomeOf(redis: Redis, prefix: string, m: Sent): Promise<string | null> {
  return redis.hget(
    `${prefix}:run:${runIdForMessage(`telegram:default:${m.chat}:${m.messageId}`)}`,
    "status",
  );
}

async function attemptOf(redis: Redis, prefix: string, m: Sent): Promise<string | null> {
  return redis.hget(
    `${prefix}:run:${runIdForMessage(`telegram:default:${m.chat}:${m.messageId}`)}`,
    "attempt",
  );
}

async function judge(telegram: FakeTelegram, redis: Redis, prefix: string, sent: Sent[]) {
  const r = {
    answered: 0,
    answeredTwice: 0,
    twiceAfterResume: 0,
    extraCopies: 0,
    recordedFailures: 0,
    lost: 0,
  };
  for (const m of sent) {
    const copies = answersTo(telegram, m);
    if (copies === 1) r.answered++;
    else if (copies > 1) {
      r.answeredTwice++;
      if (Number(await attemptOf(redis, prefix, m)) > 1) r.twiceAfterResume++;
      r.extraCopies += copies - 1;
    } else if (FAILED.has((await outcomeOf(redis, prefix, m)) ?? "")) r.recordedFailures++;
    else r.lost++;
  }
  return r;
}

/** Runs one hub crash run and reports what became of every message. */
export async function hubCrashRun(options: HubCrashOptions): Promise<HubCrashResult> {
  const o = { tokenDelayMs: 15, timeoutMs: 180_000, ...options };
  const telegram = await startFakeTelegram();
  const redis = new Redis(REDIS_URL);
  const inst = installation("faults-hub", {
    config: {
      agent: { offlineTokenDelayMs: o.tokenDelayMs, queueMode: "followup" },
      delivery: { leaseMs: 2000, sendTimeoutMs: 1500 },
      sessions: { store: o.sessionStore ?? "files" },
      channels: {
        telegram: fakeTelegramChannel(telegram, ["*"], { leaseMs: 2000 }),
      },
    },
    env: { HUB_LANE_LEASE_MS: "2000" },
  });
  try {
    let hub = (await inst.start()).hub;
    const started = Date.now();
    const sent: Sent[] = [];
    for (let n = 0; n < o.messagesPerChat; n++)
      for (let c = 0; c < o.chats; c++) {
        const m = { chat: 5000 + c, messageId: 100 + n, text: `msg-${c}-${n}` };
        sent.push(m);
        telegram.pushUpdate(
          privateText({ chatId: m.chat, fromId: m.chat, text: m.text, messageId: m.messageId }),
        );
      }
    const progress = () => sent.filter((m) => answersTo(telegram, m) > 0).length;
    for (let k = 0; k < o.kills; k++) {
      const due = Math.ceil((sent.length * (k + 1)) / (o.kills + 2));
      await until(() => progress() >= due, o.timeoutMs);
      await hub.kill();
      hub = (await inst.start()).hub;
    }
    const settled = async () => (await judge(telegram, redis, inst.prefix, sent)).lost === 0;
    await until(settled, o.timeoutMs).catch(() => {});
    // A little longer: a copy sent twice shows up now or never.
    await new Promise((r) => setTimeout(r, 1500));
    const result = await judge(telegram, redis, inst.prefix, sent);
    const unknownSendOutcomes = Number((await redis.get(`${inst.prefix}:stats:unknown-send-outcomes`)) ?? 0);
    const seconds = (Date.now() - started) / 1000;
    return { messages: sent.length, ...result, unknownSendOutcomes, kills: o.kills, seconds };
  } finally {
    await inst.dispose();
    redis.disconnect();
    await telegram.close();
  }
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`the hub crash run did not finish within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
