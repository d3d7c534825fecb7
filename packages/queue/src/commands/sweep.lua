--[[
  sweep(sched, ready; now, graceMs, limit, prefix) -> {key, ...} of keys owed a drain that show no
  sign of one (no owner lease, no pending delay) past their deadline, each put on `ready` in this
  step (wake-up fused, as in push.lua). Covers a drainer dying, and a wake-up taken from `ready` by
  a worker that died before claiming it.
]]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local woken = {}
for _, key in ipairs(due) do
  local alive = redis.call('EXISTS', ARGV[4] .. ':own:' .. key, ARGV[4] .. ':nb:' .. key)
  redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), key)
  if alive == 0 then
    redis.call('RPUSH', KEYS[2], key)
    table.insert(woken, key)
  end
end
return woken
