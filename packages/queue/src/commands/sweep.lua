--[[
  sweep(sched, epoch; now, graceMs, limit, prefix) -> {key, epoch, ...} of keys owed a drain that
  show no sign of one (no owner lease, no pending delay) past their deadline.
  Covers a process dying between a push and adding its job, and a drainer dying.
]]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, key in ipairs(due) do
  local alive = redis.call('EXISTS', ARGV[4] .. ':own:' .. key, ARGV[4] .. ':nb:' .. key)
  redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), key)
  if alive == 0 then
    table.insert(out, key)
    table.insert(out, redis.call('INCR', KEYS[2]))
  end
end
return out
