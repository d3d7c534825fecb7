--[[
  end(meta, ok, failed, channel; total, replyId, ttl)
]]
redis.call('HSET', KEYS[1], 'total', ARGV[1])
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
if redis.call('SCARD', KEYS[2]) + redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[1]) then
  redis.call('PUBLISH', KEYS[4], ARGV[2])
end
return 1
