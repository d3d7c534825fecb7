--[[
  ackNext(own, q, attempts, sched; token, itemId, attemptsField, leaseMs, now, key) -> {next head item,
  attempt} (ack, lease renewal and peek fused), or false when the list is empty: then the lease is
  released and the key is no longer owed a drain (finish fused). Error LOST when the lease is not ours.
  Pops the head only if it is the named item.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
local head = redis.call('LINDEX', KEYS[2], 0)
if head and string.sub(head, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
  redis.call('LPOP', KEYS[2])
  redis.call('HDEL', KEYS[3], ARGV[3])
  head = redis.call('LINDEX', KEYS[2], 0)
end
if not head then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[4], ARGV[6])
  return false
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[4], 'XX', tonumber(ARGV[5]) + tonumber(ARGV[4]), ARGV[6])
local cut = string.find(head, '|', 1, true)
local attempt = redis.call('HINCRBY', KEYS[3], ARGV[6] .. '|' .. string.sub(head, 1, cut - 1), 1)
return {head, attempt}
