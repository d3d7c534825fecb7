--[[
  pushOnce(q, sched, ready, own, att, once; now, graceMs, key, claimToken, leaseMs, onceTtl, items...) -> like
  push (see push.lua), or -1 with nothing written when key `once` is set already: items queued at most once
  whatever retries or restarts repeat their push (an unanswered run's notice). `once` is set for onceTtl
  seconds in the same step as the push.
]]
if not redis.call('SET', KEYS[6], '1', 'NX', 'EX', ARGV[6]) then return -1 end
local head = push_items(KEYS[1], 7)
return owe_drain(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3],
  ARGV[4], tonumber(ARGV[5]), head)
