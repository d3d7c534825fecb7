--[[
  push(q, sched, ready, own, att; now, graceMs, key, claimToken, leaseMs, items...) -> 1 when the key
  owed a drain and was put on `ready` for a drain worker (wake-up fused), 0 when a drain is owed already
  (a drainer or a wake-up will take the items), or the head item when `claimToken` (not '') claimed the
  idle key for the caller to drain (see owe-drain.lua, prepended).
]]
local head = push_items(KEYS[1], 6)
return owe_drain(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3],
  ARGV[4], tonumber(ARGV[5]), head)
