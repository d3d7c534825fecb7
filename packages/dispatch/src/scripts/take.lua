--[[
  take(bucket; capacity, refillPerMs, now) -> 1 if a token was taken. State: tokens and last refill time.
]]
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - at) * rate)
local ok = 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
end
redis.call('HSET', KEYS[1], 't', tokens, 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate) + 1000)
return ok
