--[[
  fencedPush(q, sched, ready, fence[, note]; now, graceMs, key, fenceField, fenceValue, noteArgs,
  noteField, noteValue, ..., items...) -> like push, or error FENCED (nothing written) unless hash
  `fence` holds `fenceValue` in `fenceField`. noteArgs is how many ARGV after it are the note's
  field/value pairs, written to hash `note` in the same step (a record of what was pushed).
]]
if redis.call('HGET', KEYS[4], ARGV[4]) ~= ARGV[5] then return redis.error_reply('FENCED') end
local first = 7 + tonumber(ARGV[6])
if first > 7 then redis.call('HSET', KEYS[5], unpack(ARGV, 7, first - 1)) end
for i = first, #ARGV, 500 do redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 499, #ARGV))) end
-- Owed already (the key is in sched: a drainer or a wake-up will take the items) or owed from now on.
if redis.call('ZADD', KEYS[2], 'NX', tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3]) == 0 then return 0 end
redis.call('RPUSH', KEYS[3], ARGV[3])
return 1
