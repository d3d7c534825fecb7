import type { Redis } from "ioredis";
import { mailboxBase, mailboxKeyName, SEP } from "./mailbox.js";
import { scanKeys } from "./redis.js";

/** One item at the head of a key, as an operator sees it. */
export interface MailboxItemView {
  id: string;
  /** Tries so far (the one in flight included). */
  attempts: number;
  /** The item's data as stored (JSON), or the raw text when it is unreadable. */
  data: unknown;
}

/** One key of a mailbox (a reply target, a session lane): what waits, who drains it, and until when it waits. */
export interface MailboxKeyView {
  key: string;
  depth: number;
  /** The lease token of the process draining it (installation, pid, boot), when one does. */
  drainer?: string | undefined;
  /** When a delay (a 429's retry-after, a retry backoff) ends (epoch ms). */
  delayedUntil?: number | undefined;
  head: MailboxItemView[];
}

/** One mailbox (e.g. `reply`, `runs`) as an operator sees it. */
export interface MailboxView {
  name: string;
  /** Keys waiting for a free drain worker. */
  ready: number;
  /** Keys with items, the deepest first (at most `maxKeys`). */
  keys: MailboxKeyView[];
  /** Keys with items in all (`keys` may show fewer). */
  totalKeys: number;
}

/**
 * The head item's id of every key owed a drain (in the schedule), e.g. the session lane's runs in flight.
 * One ZRANGE and one pipelined LINDEX per key; for periodic reads (recovery, status, metrics).
 */
export async function mailboxHeads(
  redis: Redis,
  prefix: string,
  name: string,
): Promise<Array<{ key: string; id: string }>> {
  const base = mailboxBase(prefix, name);
  const keys = await redis.zrange(`${base}:sched`, 0, -1);
  if (keys.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const key of keys) pipeline.lindex(mailboxKeyName(base, "q", key), 0);
  const heads = (await pipeline.exec()) ?? [];
  return keys.flatMap((key, i) => {
    const head = heads[i]?.[1];
    return typeof head === "string" ? [{ key, id: head.slice(0, head.indexOf(SEP)) }] : [];
  });
}

/**
 * Reads a mailbox's state for the operator's queue view (`/admin/queues`):
 * each key with items, its depth, its drainer, its delay and its first items.
 * Read-only; SCAN-based, so it never blocks Redis on a large installation.
 */
export async function inspectMailbox(
  redis: Redis,
  prefix: string,
  name: string,
  options: { maxKeys?: number; headItems?: number } = {},
): Promise<MailboxView> {
  const base = mailboxBase(prefix, name);
  const listPrefix = mailboxKeyName(base, "q", "");
  const lists = await scanKeys(redis, `${listPrefix}*`);
  const depths = await Promise.all(lists.map((list) => redis.llen(list)));
  const deepest = lists
    .map((list, i) => ({ key: list.slice(listPrefix.length), depth: depths[i] ?? 0 }))
    .filter((k) => k.depth > 0)
    .sort((a, b) => b.depth - a.depth);
  const shown = deepest.slice(0, options.maxKeys ?? 100);
  const keys = await Promise.all(
    shown.map((k) => keyView(redis, base, k.key, k.depth, options.headItems ?? 3)),
  );
  return { name, ready: await redis.llen(`${base}:ready`), keys, totalKeys: deepest.length };
}

async function keyView(
  redis: Redis,
  base: string,
  key: string,
  depth: number,
  headItems: number,
): Promise<MailboxKeyView> {
  const [drainer, delayMs, entries, record] = await Promise.all([
    redis.get(mailboxKeyName(base, "own", key)),
    redis.pttl(mailboxKeyName(base, "nb", key)),
    redis.lrange(mailboxKeyName(base, "q", key), 0, headItems - 1),
    redis.get(mailboxKeyName(base, "att", key)),
  ]);
  const head = entries.map((entry, i) => {
    const cut = entry.indexOf(SEP);
    const id = entry.slice(0, cut);
    return { id, attempts: i === 0 ? headAttempts(record, id) : 0, data: parseOrRaw(entry.slice(cut + 1)) };
  });
  return {
    key,
    depth,
    ...(drainer ? { drainer } : {}),
    ...(delayMs > 0 ? { delayedUntil: Date.now() + delayMs } : {}),
    head,
  };
}

// The key's attempts record is "<n>|<head item id>"; naming an earlier item, it means the head was
// handed out once (see commands/claim-next.lua).
function headAttempts(record: string | null, id: string): number {
  if (record === null) return 0;
  const cut = record.indexOf(SEP);
  return record.slice(cut + 1) === id ? Number(record.slice(0, cut)) : 1;
}

function parseOrRaw(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
