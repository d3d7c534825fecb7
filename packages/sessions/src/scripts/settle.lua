--[[
  settle(record, writer, steer, usage;
         runId, ttl, attempt, generation, inputTokens, outputTokens, field, value, ...)
  A run's end in one step: its terminal outcome decided once (as finish.lua), its writer claim
  released unless a newer claim holds it (as release.lua), its token usage added to the session's,
  and its activity ended when nothing was steered in late (as end-if-idle.lua).

  KEYS[1] run record run:<runId>
  KEYS[2] writer:<sessionKey> (also the running run: fields active, activeUntil)
  KEYS[3] steer:<runId>               KEYS[4] usage:<sessionKey> (hash input, output)

  ARGV[2] unused (the record keeps its TTL); ARGV[3] attempt that must still be current ('' = any);
  ARGV[7..] the record's outcome fields.

  Returns {decided 1|0, released 1|0, steered requests the run never took (taken: the caller
  queues them again, and the run stays active until it has), the record's startedAt or false}.
]]
local decided = 0
local state = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'startedAt', 'steered')
if (state[1] == 'running' or state[1] == 'queued') and (ARGV[3] == '' or state[2] == ARGV[3]) then
  -- The record keeps the TTL admission (or its first start) gave it.
  if #ARGV >= 8 then redis.call('HSET', KEYS[1], unpack(ARGV, 7)) end
  decided = 1
end
local released = 0
local writer = redis.call('HMGET', KEYS[2], 'runId', 'generation', 'active')
-- Only a run that had a message steered in (admit.lua marks its record) can have any left.
local steered = state[4] and redis.call('LRANGE', KEYS[3], 0, -1) or {}
-- The run's activity ends with it unless messages were steered in late (the caller queues them first).
local ending = #steered == 0 and writer[3] == ARGV[1]
if writer[1] == ARGV[1] and writer[2] == ARGV[4] then
  if ending then
    redis.call('HDEL', KEYS[2], 'runId', 'sessionId', 'active', 'activeUntil')
  else
    redis.call('HDEL', KEYS[2], 'runId', 'sessionId')
  end
  released = 1
elseif ending then
  redis.call('HDEL', KEYS[2], 'active', 'activeUntil')
end
if tonumber(ARGV[5]) > 0 then redis.call('HINCRBY', KEYS[4], 'input', ARGV[5]) end
if tonumber(ARGV[6]) > 0 then redis.call('HINCRBY', KEYS[4], 'output', ARGV[6]) end
if #steered > 0 then redis.call('DEL', KEYS[3]) end
return {decided, released, steered, state[3]}
