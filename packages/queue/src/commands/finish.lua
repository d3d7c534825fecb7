--[[
  finish(own, q, sched; token, key) -> 1 done, 0 more items arrived (keep draining), error LOST
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
