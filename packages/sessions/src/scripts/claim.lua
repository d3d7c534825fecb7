--[[
  claim(writer; runId, sessionId, now) -> {generation, previous runId or ""}

  KEYS[1] writer:<sessionKey>   the session's writer claim (runId, generation)
  ARGV[3] the lowest generation (ms): the new one is one more than the last, and at least this (see begin.lua)
]]
local writer = redis.call('HMGET', KEYS[1], 'runId', 'generation')
local generation = math.max((tonumber(writer[2]) or 0) + 1, tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionId', ARGV[2], 'generation', generation)
return {generation, writer[1] or ''}
