--[[
  mark(ok|failed set, other set, meta hash, channel; index, replyId, ttl) -> 1 when the reply is now settled
  A segment already delivered stays delivered, even if a redelivery after a crash later fails for good.
]]
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 and ARGV[4] == 'failed' then return 0 end
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[1], ARGV[1])
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
local total = redis.call('HGET', KEYS[3], 'total')
if total and redis.call('SCARD', KEYS[1]) + redis.call('SCARD', KEYS[2]) >= tonumber(total) then
  redis.call('PUBLISH', KEYS[4], ARGV[2])
  return 1
end
return 0
