--[[
  ack_next(KEYS, ARGV): a Lua function (ack.lua runs it alone; a caller's script may run it inside its
  own step, see `DrainContext.ackStep`), with the keys and arguments of
  ack(own, q, sched, att, ready[, group]; token, itemId, key, renewMs, now, outcome,
  groupTtl, channel, groupName, yield, graceMs, groupTotal, heardHere) -> one of
  - the next head item (ack and peek fused; the caller hands it out as its attempt 1, see
    claim-next.lua);
  - false when the list is empty: the lease is released with the key's attempts record (one DEL)
    and the key is no longer owed a drain (finish fused);
  - 0 when the drainer yields: `yield` is '1' and other keys wait on `ready` for a drain slot (a
    wake-up of this key waiting there does not count). The key goes behind them: lease and attempts
    record released, still owed a drain (its deadline in sched is now + graceMs, as a push gives
    it), so one busy key cannot keep a slot while others wait.
  Error LOST (an error reply, as a table with field err) when the lease is not ours. Pops the head only if it is the named item.
  renewMs > 0 renews the lease (and the key's sweep deadline) for that long.
  Groups (KEYS[6], given only for an item that counts): a group's items sit in one key and are acked in
  order, so the ack of its last item (the one whose id names the group's total, `groupTotal`) settles
  it, and only failures need counting on the way: while the group is open KEYS[6] is the count of its
  failed items (absent: none; `outcome` 'failed' adds one, TTL groupTtl s from the first). The settling
  ack turns it into "<total>|<delivered>|<failed>" (TTL groupTtl s) for anyone who asks later (one SET NX
  when nothing failed), and publishes "<groupName>|<total>|<delivered>|<failed>" on `channel`; a group
  settles once (a second end item keeps the first counts and announces nothing). With `heardHere` '1'
  (the caller's process is the one waiting for the group) the counts are not published but returned:
  {the result above, '' for false, counts}.
]]
-- A group's failed item counted, unless the group is settled already (its counts hold a '|').
local function count_failure(key, ttl)
  local prior = redis.call('GET', key)
  if prior and string.find(prior, '|', 1, true) then return end
  if redis.call('INCR', key) == 1 then redis.call('EXPIRE', key, ttl) end
end

-- The settled counts of a group whose last item is acked, or nil when it was settled before.
local function settle_group(key, total, failedNow, ttl)
  local clean = total .. '|' .. total .. '|0'
  -- Nothing failed (no count written): one step.
  if not failedNow and redis.call('SET', key, clean, 'EX', ttl, 'NX') then return clean end
  local prior = redis.call('GET', key)
  if prior and string.find(prior, '|', 1, true) then return nil end
  local failed = (tonumber(prior) or 0) + (failedNow and 1 or 0)
  local counts = total .. '|' .. (total - failed) .. '|' .. failed
  redis.call('SET', key, counts, 'EX', ttl)
  return counts
end

-- Counts of a group settled by this ack for the caller's own waiter (not published), see the header.
local function reply(settledHere, result)
  if not settledHere then return result end
  return {result or '', settledHere}
end

-- The parameters shadow the globals: the body reads as a script of its own.
local function ack_next(KEYS, ARGV)
  local settledHere
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
  local popped = redis.call('LPOP', KEYS[2])
  if popped then
    if string.sub(popped, 1, #ARGV[2] + 1) ~= ARGV[2] .. '|' then
      -- Not the named item (acked already): put it back.
      redis.call('LPUSH', KEYS[2], popped)
    elseif KEYS[6] then
      if ARGV[12] == '' then
        if ARGV[6] == 'failed' then count_failure(KEYS[6], ARGV[7]) end
      else
        -- Settled once: an end queued again (its first push's answer was lost) keeps the first counts.
        local counts = settle_group(KEYS[6], tonumber(ARGV[12]), ARGV[6] == 'failed', ARGV[7])
        if counts and ARGV[13] == '1' then
          settledHere = counts
        elseif counts then
          redis.call('PUBLISH', ARGV[8], ARGV[9] .. '|' .. counts)
        end
      end
    end
  end
  local head = redis.call('LINDEX', KEYS[2], 0)
  if not head then
    redis.call('DEL', KEYS[1], KEYS[4])
    redis.call('ZREM', KEYS[3], ARGV[3])
    return reply(settledHere, false)
  end
  if ARGV[10] == '1' then
    local waiting = redis.call('LLEN', KEYS[5])
    -- A wake-up of this key already waiting there (a sweep adds one for a key that waited past its grace)
    -- is not another key: it keeps the key's place, and alone it is no reason to yield.
    local queued = waiting > 0 and redis.call('LPOS', KEYS[5], ARGV[3], 'MAXLEN', 1000)
    if waiting > (queued and 1 or 0) then
      redis.call('DEL', KEYS[1], KEYS[4])
      redis.call('ZADD', KEYS[3], 'XX', tonumber(ARGV[5]) + tonumber(ARGV[11]), ARGV[3])
      if not queued then redis.call('RPUSH', KEYS[5], ARGV[3]) end
      return reply(settledHere, 0)
    end
  end
  local renew = tonumber(ARGV[4])
  if renew > 0 then
    redis.call('PEXPIRE', KEYS[1], renew)
    redis.call('ZADD', KEYS[3], 'XX', tonumber(ARGV[5]) + renew, ARGV[3])
  end
  return reply(settledHere, head)
end
