--[[
  delay(own, nb, sched, epoch; token, key, delayMs, now, graceMs) -> epoch of the delayed wake-up job, error LOST
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[3], tonumber(ARGV[4]) + tonumber(ARGV[3]) + tonumber(ARGV[5]), ARGV[2])
return redis.call('INCR', KEYS[4])
