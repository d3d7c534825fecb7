--[[
  finish(record, outsideLane; runId, ttl, attempt, decidedBy, field, value, ...) -> 1 decided now (or by
  this same call before: a retry after its answer was lost), 0 already over or a newer attempt owns it.

  KEYS[1] run:<runId>            the run's record
  KEYS[2] runs:outside-lane      the set of runs in flight outside the session lanes (see start.lua)
  ARGV[1] runId
  ARGV[2] the record's TTL, seconds
  ARGV[3] attempt ('' for any): only this attempt may decide
  ARGV[4] a token of this call (its retries send the same), kept in field decidedBy
  ARGV[5..] the outcome's fields (RunRecords.outcomeFields)
]]
local state = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'decidedBy')
if state[1] ~= 'running' and state[1] ~= 'queued' then
  if state[3] == ARGV[4] then return 1 end
  return 0
end
if ARGV[3] ~= '' and state[2] ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], 'decidedBy', ARGV[4], unpack(ARGV, 5))
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
