--[[
  take_token(key, capacity, refillPerMs, now) -> true when a token was taken, false when the bucket is empty.
  A Lua function prepended to the scripts that take flood-limit tokens (tokenBucketScript), so they
  share one bucket format: the string "<tokens> <last refill ms>" with a PX of a full refill.
]]
local function take_token(key, capacity, rate, now)
  local tokens, at = capacity, now
  local state = redis.call('GET', key)
  if state then
    local t, a = string.match(state, '^(%S+) (%S+)$')
    tokens, at = tonumber(t) or capacity, tonumber(a) or now
  end
  -- A caller reads its clock before its command waits in line: a "now" older than the last refill counts
  -- as that refill's time, or the time between the two would be refilled twice (extra tokens in a flood).
  now = math.max(now, at)
  tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
  if tokens < 1 then return false end
  redis.call('SET', key, string.format('%.17g %.0f', tokens - 1, now), 'PX', math.ceil(capacity / rate) + 1000)
  return true
end
