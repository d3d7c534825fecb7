/**
 * The mailbox's atomic steps, as Lua scripts. Every step that decides
 * "is a drain owed" or "who drains" runs inside Redis in one step, because the
 * race that loses a segment is exactly a push landing between a drainer's
 * "mailbox is empty" check and its "I am done" mark.
 *
 * Keys of one mailbox `M` and item key `k`:
 * - `M:q:k`     list of items, oldest first (item = "<id>|<payload>")
 * - `M:own:k`   drain owner token, with a lease (PX); renewed while draining
 * - `M:nb:k`    "not before": set while the key waits out a retry-after
 * - `M:sched`   zset key -> time by which a drain must have shown progress;
 *               a key is in it exactly while its items are owed a drain
 * - `M:epoch`   counter that makes each wake-up's BullMQ job id unique
 */

/** push(q, sched, epoch; now, graceMs, key, items...) -> epoch of a wake-up job to add, or 0 */
export const PUSH = `
for i = 4, #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
if redis.call('ZSCORE', KEYS[2], ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3])
return redis.call('INCR', KEYS[3])
`;

/**
 * fencedPush(q, sched, epoch, fence; now, graceMs, key, fenceField, fenceValue, items...) -> like push,
 * or error FENCED (nothing written) unless hash `fence` holds `fenceValue` in `fenceField`
 */
export const FENCED_PUSH = `
if redis.call('HGET', KEYS[4], ARGV[4]) ~= ARGV[5] then return redis.error_reply('FENCED') end
for i = 6, #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
if redis.call('ZSCORE', KEYS[2], ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3])
return redis.call('INCR', KEYS[3])
`;

/** claim(own, nb, sched; token, leaseMs, now, key) -> 1 claimed, 0 another drainer is alive, -1 waiting out a delay */
export const CLAIM = `
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
return 1
`;

/**
 * peek(own, q, sched, attempts; token, leaseMs, now, key) -> {head item, attempt} (attempt counted
 * here, so a poison item that crashes its drainer still runs out of attempts), false when empty,
 * or error LOST
 */
export const PEEK = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[3], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
local head = redis.call('LINDEX', KEYS[2], 0)
if not head then return false end
local cut = string.find(head, '|', 1, true)
local attempt = redis.call('HINCRBY', KEYS[4], ARGV[4] .. '|' .. string.sub(head, 1, cut - 1), 1)
return {head, attempt}
`;

/**
 * renew(own, sched; token, leaseMs, now, key) -> 1, or 0 when the lease was lost. The key's sweep
 * deadline moves with the lease, so a dead drainer's key is picked up as soon as its lease ends.
 */
export const RENEW = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
return 1
`;

/**
 * reclaim(own, sched, epoch; token, now, key) -> epoch of a wake-up job to add, or 0 when the lease
 * is no longer that token's. Ends the lease of a drainer known to be dead (a predecessor process).
 */
export const RECLAIM = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[2], tonumber(ARGV[2]), ARGV[3])
return redis.call('INCR', KEYS[3])
`;

/** ack(own, q, attempts; token, itemId, attemptsField) -> 1 popped, 0 head was not that item, error LOST */
export const ACK = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
local head = redis.call('LINDEX', KEYS[2], 0)
if head and string.sub(head, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
  redis.call('LPOP', KEYS[2])
  redis.call('HDEL', KEYS[3], ARGV[3])
  return 1
end
return 0
`;

/** finish(own, q, sched; token, key) -> 1 done, 0 more items arrived (keep draining), error LOST */
export const FINISH = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
`;

/** delay(own, nb, sched, epoch; token, key, delayMs, now, graceMs) -> epoch of the delayed wake-up job, error LOST */
export const DELAY = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[3], tonumber(ARGV[4]) + tonumber(ARGV[3]) + tonumber(ARGV[5]), ARGV[2])
return redis.call('INCR', KEYS[4])
`;

/**
 * sweep(sched, epoch; now, graceMs, limit, prefix) -> {key, epoch, ...} of keys owed a drain that
 * show no sign of one (no owner lease, no pending delay) past their deadline.
 * Covers a process dying between a push and adding its job, and a drainer dying.
 */
export const SWEEP = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, key in ipairs(due) do
  local alive = redis.call('EXISTS', ARGV[4] .. ':own:' .. key) + redis.call('EXISTS', ARGV[4] .. ':nb:' .. key)
  redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), key)
  if alive == 0 then
    table.insert(out, key)
    table.insert(out, redis.call('INCR', KEYS[2]))
  end
end
return out
`;
