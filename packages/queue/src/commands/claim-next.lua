--[[
  claimNext(own, nb, sched, q, attempts; token, leaseMs, now, key) -> {head item, attempt} claimed
  with its first item (claim and peek fused: one round trip), 0 another drainer is alive, -1 waiting
  out a delay, 2 nothing to drain (the key is no longer owed a drain; no lease taken)
]]
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return 0 end
local head = redis.call('LINDEX', KEYS[4], 0)
if not head then
  redis.call('ZREM', KEYS[3], ARGV[4])
  return 2
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
local cut = string.find(head, '|', 1, true)
local attempt = redis.call('HINCRBY', KEYS[5], ARGV[4] .. '|' .. string.sub(head, 1, cut - 1), 1)
return {head, attempt}
