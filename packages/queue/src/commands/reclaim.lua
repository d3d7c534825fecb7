--[[
  reclaim(own, sched, epoch; token, now, key) -> epoch of a wake-up job to add, or 0 when the lease
  is no longer that token's. Ends the lease of a drainer known to be dead (a predecessor process).
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[2], tonumber(ARGV[2]), ARGV[3])
return redis.call('INCR', KEYS[3])
