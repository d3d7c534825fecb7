--[[
  takeCollected(list, pending, runBatch) -> the run's batch (moved from the session's list the first time)
]]
if redis.call('EXISTS', KEYS[3]) == 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[3])
  redis.call('EXPIRE', KEYS[3], 86400)
  redis.call('DEL', KEYS[2])
end
return redis.call('LRANGE', KEYS[3], 0, -1)
