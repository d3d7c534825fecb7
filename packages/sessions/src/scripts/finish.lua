--[[
  finish(record, outsideLane; runId, ttl, attempt, 'status', status, 'endedAt', endedAt, field, value, ...)
    -> 1 decided now (or by this same step before: a retry after its answer was lost), 0 already over or a
    newer attempt owns it.

  KEYS[1] run:<runId>            the run's record
  KEYS[2] runs:outside-lane      the set of runs in flight outside the session lanes (see start.lua)
  ARGV[1] runId
  ARGV[2] the record's TTL, seconds
  ARGV[3] attempt ('' for any): only this attempt may decide
  ARGV[4..] the outcome's fields, status and endedAt first (RunRecords.outcomeFields)
]]
local state = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'endedAt')
if state[1] ~= 'running' and state[1] ~= 'queued' then
  -- The same outcome (status and end time) written already: this step's retry.
  if state[1] == ARGV[5] and state[3] == ARGV[7] then return 1 end
  return 0
end
if ARGV[3] ~= '' and state[2] ~= ARGV[3] then return 0 end
if #ARGV >= 5 then redis.call('HSET', KEYS[1], unpack(ARGV, 4)) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
