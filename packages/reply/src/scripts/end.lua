--[[
  end(meta, ok, failed, channel; total, replyId, ttl)
  The sets get their TTL from the marks that write them.
]]
redis.call('HSET', KEYS[1], 'total', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
if redis.call('SCARD', KEYS[2]) + redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[1]) then
  redis.call('PUBLISH', KEYS[4], ARGV[2])
end
return 1
