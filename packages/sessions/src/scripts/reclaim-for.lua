--[[
  reclaim-for(writer; runId) -> the claim's new generation when taken again for runId (generation + 1),
  0 when another run (or none) holds the session: nothing changed

  KEYS[1] writer:<sessionKey>   the session's writer claim (runId, generation)
  ARGV[1] the run that must hold it
]]
local writer = redis.call('HMGET', KEYS[1], 'runId', 'generation')
if writer[1] ~= ARGV[1] or not writer[2] then return 0 end
local generation = tonumber(writer[2]) + 1
redis.call('HSET', KEYS[1], 'generation', generation)
return generation
