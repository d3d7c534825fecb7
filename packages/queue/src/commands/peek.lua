--[[
  peek(own, q, sched, attempts; token, leaseMs, now, key) -> {head item, attempt} (attempt counted
  here, so a poison item that crashes its drainer still runs out of attempts), false when empty,
  or error LOST
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[3], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
local head = redis.call('LINDEX', KEYS[2], 0)
if not head then return false end
local cut = string.find(head, '|', 1, true)
local attempt = redis.call('HINCRBY', KEYS[4], ARGV[4] .. '|' .. string.sub(head, 1, cut - 1), 1)
return {head, attempt}
