--[[
  take(steer; -) -> every queued steering request, atomically (the list is emptied)
]]
local all = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return all
