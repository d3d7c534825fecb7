--[[
  claim(writer; runId, sessionId, generationBase) -> {generation, previous runId or ""}
  generationBase: the generation a session's first claim follows (the time in ms, as in begin.lua).
]]
local writer = redis.call('HMGET', KEYS[1], 'runId', 'generation')
local generation = (tonumber(writer[2]) or tonumber(ARGV[3])) + 1
redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionId', ARGV[2], 'generation', generation)
return {generation, writer[1] or ''}
