--[[
  finish(record, active; runId, ttl, attempt, field, value, ...) -> 1 decided now, 0 already over or a newer attempt owns it
]]
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'running' and status ~= 'queued' then return 0 end
if ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'attempt') ~= ARGV[3] then return 0 end
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
