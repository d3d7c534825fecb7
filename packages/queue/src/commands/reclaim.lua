--[[
  reclaim(own, sched, ready[, att]; token, now, key, graceMs) -> 1 when the lease was that token's: it is
  ended and the key put on `ready` in this step (wake-up fused, deadline now + graceMs as push.lua gives a
  wake-up, so the sweep does not wake it a second time while it waits there for a slot), 0 otherwise.
  Ends the lease of a drainer known to be dead (a predecessor process), or hands back a key this process
  claimed and never handed to a handler: then `att`, the head's attempts record its claim wrote, is
  removed with the lease (the next claim hands the head out as attempt 1 again).
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if KEYS[4] then
  redis.call('DEL', KEYS[1], KEYS[4])
else
  redis.call('DEL', KEYS[1])
end
redis.call('ZADD', KEYS[2], tonumber(ARGV[2]) + tonumber(ARGV[4]), ARGV[3])
redis.call('RPUSH', KEYS[3], ARGV[3])
return 1
