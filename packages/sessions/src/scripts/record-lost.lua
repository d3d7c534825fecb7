--[[
  recordLost(record, outsideLane; runId, sessionKey, ttl, now, field, value, ...) -> 1 written, 0 already decided
  After Redis lost its data the record may be gone: it is written whole again, unless something decided it meanwhile.
]]
local status = redis.call('HGET', KEYS[1], 'status')
if status and status ~= 'running' and status ~= 'queued' then return 0 end
redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionKey', ARGV[2])
redis.call('HSETNX', KEYS[1], 'startedAt', ARGV[4])
redis.call('HSETNX', KEYS[1], 'attempt', 1)
for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
