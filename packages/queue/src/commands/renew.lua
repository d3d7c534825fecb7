--[[
  renew(own, sched; token, leaseMs, now, key) -> 1, or 0 when the lease was lost. The key's sweep
  deadline moves with the lease, so a dead drainer's key is picked up as soon as its lease ends.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
return 1
