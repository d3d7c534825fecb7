--[[
  endGroup(group; total, ttl, channel, groupName) -> {total, left, failed}: sets the group's total
  (once: a second end keeps the first) and learns in the same step how many of its items are still
  to be acked (`left`; see ack-next.lua, where each ack takes one off). When none is left, the
  group is settled: "<groupName>|<total>|<delivered>|<failed>" is published on `channel`.
]]
local total, left
if redis.call('HSETNX', KEYS[1], 'total', ARGV[1]) == 1 then
  total = tonumber(ARGV[1])
  left = redis.call('HINCRBY', KEYS[1], 'left', total)
else
  local t = redis.call('HMGET', KEYS[1], 'total', 'left')
  total, left = tonumber(t[1]) or 0, tonumber(t[2]) or 0
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
local failed = 0
if left <= 0 then
  failed = tonumber(redis.call('HGET', KEYS[1], 'failed')) or 0
  redis.call('PUBLISH', ARGV[3], ARGV[4] .. '|' .. total .. '|' .. (total - failed) .. '|' .. failed)
end
return {total, left, failed}
