--[[
  endIfIdle(writer, steer; runId) -> 1 ended (nothing steered is waiting), 0 messages are still waiting
  The session's running run is the writer hash's `active` field (with its deadline `activeUntil`).
]]
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
if redis.call('HGET', KEYS[1], 'active') == ARGV[1] then redis.call('HDEL', KEYS[1], 'active', 'activeUntil') end
return 1
