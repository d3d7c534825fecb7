--[[
  claim(writer; runId, sessionId) -> {generation, previous runId or ""}
]]
local previous = redis.call('HGET', KEYS[1], 'runId') or ''
local generation = redis.call('HINCRBY', KEYS[1], 'generation', 1)
redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionId', ARGV[2])
return {generation, previous}
