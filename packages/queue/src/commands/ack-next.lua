--[[
  ackNext(own, q, sched, att[, group]; token, itemId, key, renewMs, now, outcome, groupTtl,
  channel, groupName) -> the next head item (ack and peek fused; the caller hands it out as its
  attempt 1, see claim-next.lua), or false when the list is empty: then the lease is released with
  the key's attempts record (one DEL) and the key is no longer owed a drain (finish fused).
  Error LOST when the lease is not ours. Pops the head only if it is the named item.
  renewMs > 0 renews the lease (and the key's sweep deadline) for that long.
  With `group` (a hash: total, left, failed): the popped item counts toward its group, `outcome`
  'failed' as failed; when `left` reaches 0 (every item of the group, whose total `end-group.lua`
  added, is acked) "<groupName>|<total>|<delivered>|<failed>" is published on `channel`.
  The hash gets its TTL (groupTtl s) when its first ack creates it, and again from end-group.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
local popped = redis.call('LPOP', KEYS[2])
if popped then
  if string.sub(popped, 1, #ARGV[2] + 1) ~= ARGV[2] .. '|' then
    -- Not the named item (acked already): put it back.
    redis.call('LPUSH', KEYS[2], popped)
  elseif KEYS[5] then
    local left = redis.call('HINCRBY', KEYS[5], 'left', -1)
    if ARGV[6] == 'failed' then redis.call('HINCRBY', KEYS[5], 'failed', 1) end
    if left == -1 then redis.call('EXPIRE', KEYS[5], ARGV[7]) end
    if left == 0 then
      local counts = redis.call('HMGET', KEYS[5], 'total', 'failed')
      local total, failed = tonumber(counts[1]) or 0, tonumber(counts[2]) or 0
      redis.call('PUBLISH', ARGV[8], ARGV[9] .. '|' .. total .. '|' .. (total - failed) .. '|' .. failed)
    end
  end
end
local head = redis.call('LINDEX', KEYS[2], 0)
if not head then
  redis.call('DEL', KEYS[1], KEYS[4])
  redis.call('ZREM', KEYS[3], ARGV[3])
  return false
end
local renew = tonumber(ARGV[4])
if renew > 0 then
  redis.call('PEXPIRE', KEYS[1], renew)
  redis.call('ZADD', KEYS[3], 'XX', tonumber(ARGV[5]) + renew, ARGV[3])
end
return head
