--[[
  settle(record, activeRuns, writer, active, steer, usage;
         runId, ttl, attempt, generation, inputTokens, outputTokens, field, value, ...)
  A run's end in one step: its terminal outcome decided once (as finish.lua), its writer claim
  released unless a newer claim holds it (as release.lua), its token usage added to the session's,
  and its activity ended when nothing was steered in late (as end-if-idle.lua).

  KEYS[1] run record run:<runId>      KEYS[2] runs:active (set)
  KEYS[3] writer:<sessionKey>         KEYS[4] active:<sessionKey>
  KEYS[5] steer:<runId>               KEYS[6] usage:<sessionKey> (hash input, output)

  ARGV[3] attempt that must still be current ('' = any); ARGV[7..] the record's outcome fields.

  Returns {decided 1|0, released 1|0, steered requests the run never took (taken: the caller
  queues them again, and the run stays active until it has), the record's startedAt or false}.
]]
local decided = 0
local state = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'startedAt')
if (state[1] == 'running' or state[1] == 'queued') and (ARGV[3] == '' or state[2] == ARGV[3]) then
  -- The record keeps the TTL admission (or its first start) gave it.
  if #ARGV >= 8 then redis.call('HSET', KEYS[1], unpack(ARGV, 7)) end
  redis.call('SREM', KEYS[2], ARGV[1])
  decided = 1
end
local released = 0
local writer = redis.call('HMGET', KEYS[3], 'runId', 'generation')
if writer[1] == ARGV[1] and writer[2] == ARGV[4] then
  redis.call('HDEL', KEYS[3], 'runId', 'sessionId')
  released = 1
end
if tonumber(ARGV[5]) > 0 then redis.call('HINCRBY', KEYS[6], 'input', ARGV[5]) end
if tonumber(ARGV[6]) > 0 then redis.call('HINCRBY', KEYS[6], 'output', ARGV[6]) end
local steered = redis.call('LRANGE', KEYS[5], 0, -1)
if #steered > 0 then
  redis.call('DEL', KEYS[5])
elseif released == 1 then
  -- No claim since this run's, so no run was marked active since (begin marks with its claim, a resume
  -- claims before it marks): the mark is this run's, or gone.
  redis.call('DEL', KEYS[4])
elseif redis.call('GET', KEYS[4]) == ARGV[1] then
  redis.call('DEL', KEYS[4])
end
return {decided, released, steered, state[3]}
