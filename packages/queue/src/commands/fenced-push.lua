--[[
  fencedPush(q, sched, ready, own, att, fence[, note]; now, graceMs, key, claimToken, leaseMs, fenceField,
  fenceValue, noteArgs, noteField, noteValue, ..., items...) -> like push (see push.lua), or error FENCED
  (nothing written) unless hash `fence` holds `fenceValue` in `fenceField`. noteArgs is how many ARGV
  after it are the note's field/value pairs, written to hash `note` in the same step (a record of what
  was pushed).
]]
if redis.call('HGET', KEYS[6], ARGV[6]) ~= ARGV[7] then return redis.error_reply('FENCED') end
local first = 9 + tonumber(ARGV[8])
if first > 9 then redis.call('HSET', KEYS[7], unpack(ARGV, 9, first - 1)) end
local head
for i = first, #ARGV, 500 do
  local last = math.min(i + 499, #ARGV)
  -- The list held nothing before: its head is the first item pushed.
  if redis.call('RPUSH', KEYS[1], unpack(ARGV, i, last)) == last - i + 1 and i == first then head = ARGV[first] end
end
return owe_drain(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3],
  ARGV[4], tonumber(ARGV[5]), head)
