--[[
  reclaim(own, sched, ready; token, now, key) -> 1 when the lease was that token's: it is ended and
  the key put on `ready` in this step (wake-up fused), 0 otherwise. Ends the lease of a drainer known
  to be dead (a predecessor process).
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[2], tonumber(ARGV[2]), ARGV[3])
redis.call('RPUSH', KEYS[3], ARGV[3])
return 1
