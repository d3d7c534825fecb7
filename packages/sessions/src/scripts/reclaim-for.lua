--[[
  reclaim-for(writer; runId, now) -> the claim's new generation when taken again for runId (one more than
  the last, and at least now: see begin.lua), 0 when another run (or none) holds the session: nothing changed

  KEYS[1] writer:<sessionKey>   the session's writer claim (runId, generation)
  ARGV[1] the run that must hold it   ARGV[2] the lowest generation (ms, see begin.lua)
]]
local writer = redis.call('HMGET', KEYS[1], 'runId', 'generation')
if writer[1] ~= ARGV[1] or not writer[2] then return 0 end
local generation = math.max(tonumber(writer[2]) + 1, tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'generation', generation)
return generation
