--[[
  take(bucket; capacity, refillPerMs, now) -> 1 if a token was taken, 0 if the bucket is empty.
  State: one string "<tokens> <last refill ms>" with a PX of a full refill, the same format the
  session admission script (sessions/src/scripts/admit.lua) takes its tokens from.
]]
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('GET', KEYS[1])
local tokens, at = capacity, now
if state then
  local t, a = string.match(state, '^(%S+) (%S+)$')
  tokens, at = tonumber(t) or capacity, tonumber(a) or now
end
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
if tokens < 1 then return 0 end
redis.call('SET', KEYS[1], string.format('%.17g %.0f', tokens - 1, now), 'PX', math.ceil(capacity / rate) + 1000)
return 1
