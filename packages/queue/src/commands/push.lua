--[[
  push(q, sched, ready; now, graceMs, key, items...) -> 1 when the key owed a drain and was put on
  `ready` for a drain worker (wake-up fused), 0 when a drain is owed already (a drainer or a wake-up
  will take the items).
]]
for i = 4, #ARGV, 500 do redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 499, #ARGV))) end
-- Owed already (the key is in sched: a drainer or a wake-up will take the items) or owed from now on.
if redis.call('ZADD', KEYS[2], 'NX', tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3]) == 0 then return 0 end
redis.call('RPUSH', KEYS[3], ARGV[3])
return 1
