--[[
  finish(record, outsideLane; runId, ttl, attempt, field, value, ...) -> 1 decided now, 0 already over or a
  newer attempt owns it. KEYS[2]: the set of runs in flight outside the session lanes (see start.lua).
]]
local state = redis.call('HMGET', KEYS[1], 'status', 'attempt')
if state[1] ~= 'running' and state[1] ~= 'queued' then return 0 end
if ARGV[3] ~= '' and state[2] ~= ARGV[3] then return 0 end
if #ARGV >= 5 then redis.call('HSET', KEYS[1], unpack(ARGV, 4)) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
