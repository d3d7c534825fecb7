--[[
  release(writer; runId, generation) -> 1 released, 0 a newer claim holds it (left alone)
]]
if redis.call('HGET', KEYS[1], 'runId') == ARGV[1] and redis.call('HGET', KEYS[1], 'generation') == ARGV[2] then
  redis.call('HDEL', KEYS[1], 'runId', 'sessionId')
  return 1
end
return 0
