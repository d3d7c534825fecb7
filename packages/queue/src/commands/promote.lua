--[[
  promote(delayed, ready; now, limit) -> number of keys moved: keys whose delay is over go from the
  `delayed` zset to the `ready` list, where a drain worker picks them up.
]]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, key in ipairs(due) do
  redis.call('ZREM', KEYS[1], key)
  redis.call('RPUSH', KEYS[2], key)
end
return #due
