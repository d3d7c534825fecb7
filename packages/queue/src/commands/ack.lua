--[[
  ack(own, q, attempts; token, itemId, attemptsField) -> 1 popped, 0 head was not that item, error LOST
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
local head = redis.call('LINDEX', KEYS[2], 0)
if head and string.sub(head, 1, #ARGV[2] + 1) == ARGV[2] .. '|' then
  redis.call('LPOP', KEYS[2])
  redis.call('HDEL', KEYS[3], ARGV[3])
  return 1
end
return 0
