--[[
  end(meta, ok, failed, channel; total, replyId, ttl) -> {delivered, failed} so far
  Publishes on the channel when the reply is settled already (every segment delivered or failed).
  The sets get their TTL from the marks that write them.
]]
redis.call('HSET', KEYS[1], 'total', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
local delivered = redis.call('SCARD', KEYS[2])
local failed = redis.call('SCARD', KEYS[3])
if delivered + failed >= tonumber(ARGV[1]) then
  redis.call('PUBLISH', KEYS[4], ARGV[2])
end
return {delivered, failed}
