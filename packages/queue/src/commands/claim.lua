--[[
  claim(own, nb, sched; token, leaseMs, now, key) -> 1 claimed, 0 another drainer is alive, -1 waiting out a delay
]]
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
return 1
