--[[
  claim(writer; runId, sessionId, generationBase) -> {generation, previous runId or ""}
  generationBase: the generation a session's first claim follows (the time in ms, as in begin.lua).
]]
local writer = redis.call('HMGET', KEYS[1], 'runId', 'generation')
-- One from before generations started at the time in ms (under 10^12) moves up to it (see begin.lua).
local current = tonumber(writer[2])
if not current or current < 1e12 then current = tonumber(ARGV[3]) end
local generation = current + 1
redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionId', ARGV[2], 'generation', generation)
return {generation, writer[1] or ''}
