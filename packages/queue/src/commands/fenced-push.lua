--[[
  fencedPush(q, sched, ready, own, att, fence[, note]; now, graceMs, key, claimToken, leaseMs, fenceField,
  fenceValue, noteTtl, noteArgs, note..., items...) -> like push (see push.lua), or error FENCED (nothing
  written) unless hash `fence` holds `fenceValue` in `fenceField`. noteArgs is how many ARGV after it are
  the note, written to key `note` in the same step (a record of what was pushed): with noteTtl 0, its
  field/value pairs, to a hash; else its one value, to a string kept noteTtl seconds.
]]
if redis.call('HGET', KEYS[6], ARGV[6]) ~= ARGV[7] then return redis.error_reply('FENCED') end
local first = 10 + tonumber(ARGV[9])
if first > 10 and ARGV[8] ~= '0' then
  redis.call('SET', KEYS[7], ARGV[10], 'EX', ARGV[8])
elseif first > 10 then
  redis.call('HSET', KEYS[7], unpack(ARGV, 10, first - 1))
end
local head = push_items(KEYS[1], first)
return owe_drain(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3],
  ARGV[4], tonumber(ARGV[5]), head)
