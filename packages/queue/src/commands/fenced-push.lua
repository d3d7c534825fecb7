--[[
  fencedPush(q, sched, ready, fence; now, graceMs, key, fenceField, fenceValue, items...) -> like push,
  or error FENCED (nothing written) unless hash `fence` holds `fenceValue` in `fenceField`
]]
if redis.call('HGET', KEYS[4], ARGV[4]) ~= ARGV[5] then return redis.error_reply('FENCED') end
for i = 6, #ARGV, 500 do redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 499, #ARGV))) end
-- Owed already (the key is in sched: a drainer or a wake-up will take the items) or owed from now on.
if redis.call('ZADD', KEYS[2], 'NX', tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3]) == 0 then return 0 end
redis.call('RPUSH', KEYS[3], ARGV[3])
return 1
