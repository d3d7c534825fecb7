--[[
  push(q, sched, epoch; now, graceMs, key, items...) -> epoch of a wake-up job to add, or 0
]]
for i = 4, #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
if redis.call('ZSCORE', KEYS[2], ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3])
return redis.call('INCR', KEYS[3])
