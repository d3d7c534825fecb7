--[[
  endIfIdle(active, steer; runId) -> 1 ended (nothing steered is waiting), 0 messages are still waiting
]]
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
