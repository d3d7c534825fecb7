// The load of the end-to-end benchmark: N private chats on a fake Telegram, each sending M messages
// with at most `window` unanswered at a time, like people waiting for the answer. Replies are read off
// the fake's recorded sendMessage calls; the reply to "bench <chat> <n>" must echo it.
import { performance } from "node:perf_hooks";
import { type FakeTelegram, privateText } from "@hub/fakes";
import { pct } from "./meter.js";

/** How big the load is. */
export interface LoadShape {
  chats: number;
  messages: number;
  /** Messages a chat may have unanswered at once (more than 1 tests ordering). */
  window: number;
  timeoutMs: number;
  /** Chat ids start at 7,000,000 + this (default 0): a second load on new chats. */
  firstChat?: number;
}

/** What the platform saw. */
export interface LoadResult {
  answered: number;
  seconds: number;
  /** Update pushed -> reply arrived at the fake, in ms, sorted. */
  latencies: number[];
  outOfOrder: number;
  duplicates: number;
  lost: number;
  /** Per answered message of an open-loop load: sent at (ms into the load), chat, n, latency (ms). */
  samples?: Array<{ at: number; chat: number; n: number; ms: number }>;
  /** When the load started (performance.now()); samples' `at` count from it. */
  startedAt?: number;
}

const REPLY = /bench (\d+) (\d+)\b/;

/** Drives the load against `fake` and resolves once every message is answered or the timeout passes. */
export async function driveChats(fake: FakeTelegram, shape: LoadShape): Promise<LoadResult> {
  const { chats, messages, window } = shape;
  const base = 7_000_000 + (shape.firstChat ?? 0);
  const sentAt = new Map<string, number>();
  const answered = new Map<string, number>();
  const nextToSend = new Array<number>(chats).fill(0);
  const lastAnswered = new Array<number>(chats).fill(-1);
  const inFlight = new Array<number>(chats).fill(0);
  const latencies: number[] = [];
  let outOfOrder = 0;
  let duplicates = 0;
  const epochOffset = Date.now() - performance.now();
  const push = (chat: number) => {
    while (inFlight[chat]! < window && nextToSend[chat]! < messages) {
      const n = nextToSend[chat]!++;
      inFlight[chat]!++;
      sentAt.set(`${chat} ${n}`, performance.now());
      fake.pushUpdate(privateText({ chatId: base + chat, fromId: base + chat, text: `bench ${chat} ${n}` }));
    }
  };
  const started = performance.now();
  for (let c = 0; c < chats; c++) push(c);
  // Replies to an earlier load on the same fake are not this load's.
  let cursor = fake.calls.length;
  const total = chats * messages;
  const deadline = started + shape.timeoutMs;
  while (answered.size < total && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1));
    const calls = fake.calls;
    for (; cursor < calls.length; cursor++) {
      const call = calls[cursor]!;
      if (call.method !== "sendMessage") continue;
      const text = call.params.text;
      // A call still reading its body has no params yet: look again next time.
      if (typeof text !== "string") break;
      const m = REPLY.exec(text);
      if (!m) continue;
      const chat = Number(m[1]);
      const n = Number(m[2]);
      const key = `${chat} ${n}`;
      if (answered.has(key)) {
        duplicates++;
        continue;
      }
      answered.set(key, call.at);
      latencies.push(call.at - epochOffset - (sentAt.get(key) ?? call.at - epochOffset));
      if (n < lastAnswered[chat]!) outOfOrder++;
      lastAnswered[chat] = Math.max(lastAnswered[chat]!, n);
      inFlight[chat]!--;
      push(chat);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { answered: answered.size, seconds, latencies, outOfOrder, duplicates, lost: total - answered.size };
}

/** One line of results. */
export function printLoad(name: string, r: LoadResult): void {
  console.log(
    `  ${name}: ${(r.answered / r.seconds).toFixed(0)} messages/s (${r.answered} in ${r.seconds.toFixed(1)} s); ` +
      `latency p50 ${pct(r.latencies, 50)} ms, p99 ${pct(r.latencies, 99)} ms; ` +
      `${r.outOfOrder} out of order, ${r.duplicates} duplicates, ${r.lost} lost`,
  );
}

/** An open-loop load: messages arrive at a steady rate whatever the answers do, like many independent people. */
export interface PacedShape {
  /** Messages per second. */
  rate: number;
  seconds: number;
  /** Messages go round-robin over this many chats (each chat's in order). */
  chats: number;
  /** Chat ids start at 7,000,000 + this. */
  firstChat: number;
  timeoutMs: number;
}

/** Pushes `rate` messages/s for `seconds`, then waits for the answers; latency is pushed -> reply at the fake. */
export async function drivePaced(fake: FakeTelegram, shape: PacedShape): Promise<LoadResult> {
  const base = 7_000_000 + shape.firstChat;
  const total = Math.round(shape.rate * shape.seconds);
  const sentAt = new Map<string, number>();
  const epochOffset = Date.now() - performance.now();
  const started = performance.now();
  const answered = new Set<string>();
  const latencies: number[] = [];
  const lastAnswered = new Array<number>(shape.chats).fill(-1);
  const samples: NonNullable<LoadResult["samples"]> = [];
  let outOfOrder = 0;
  let duplicates = 0;
  let cursor = fake.calls.length;
  const collect = () => {
    for (const calls = fake.calls; cursor < calls.length; cursor++) {
      const call = calls[cursor]!;
      if (call.method !== "sendMessage") continue;
      if (typeof call.params.text !== "string") break;
      const m = REPLY.exec(call.params.text);
      if (!m) continue;
      const key = `${m[1]} ${m[2]}`;
      if (answered.has(key)) duplicates++;
      else {
        answered.add(key);
        const at = sentAt.get(key) ?? call.at - epochOffset;
        latencies.push(call.at - epochOffset - at);
        const chat = Number(m[1]);
        samples.push({ at: at - started, chat, n: Number(m[2]), ms: call.at - epochOffset - at });
        if (Number(m[2]) < lastAnswered[chat]!) outOfOrder++;
        lastAnswered[chat] = Math.max(lastAnswered[chat]!, Number(m[2]));
      }
    }
  };
  let sent = 0;
  // Every 5 ms, the messages due by now: a steady rate, whatever the event loop's jitter.
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * shape.rate));
    for (; sent < due; sent++) {
      const chat = sent % shape.chats;
      const n = Math.floor(sent / shape.chats);
      sentAt.set(`${chat} ${n}`, performance.now());
      fake.pushUpdate(privateText({ chatId: base + chat, fromId: base + chat, text: `bench ${chat} ${n}` }));
    }
    collect();
    await new Promise((r) => setTimeout(r, 5));
  }
  const deadline = performance.now() + shape.timeoutMs;
  while (answered.size < total && performance.now() < deadline) {
    collect();
    await new Promise((r) => setTimeout(r, 5));
  }
  latencies.sort((a, b) => a - b);
  const seconds = (performance.now() - started) / 1000;
  return {
    answered: answered.size,
    seconds,
    latencies,
    outOfOrder,
    duplicates,
    lost: total - answered.size,
    samples,
    startedAt: started,
  };
}
