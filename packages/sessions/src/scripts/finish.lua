--[[
  finish(record, outsideLane, answer[, usage]; runId, ttl, attempt, decidedBy, input, output, field, value, ...)
  -> 1 decided now (or by this same call before: a retry after its answer was lost), 0 already over or a
  newer attempt owns it.

  KEYS[1] run:<runId>            the run's record
  KEYS[2] runs:outside-lane      the set of runs in flight outside the session lanes (see start.lua)
  KEYS[3] answer:<runId>         the run's staged answer (RunRecords.answerNote): deleted when this decides,
                                 nothing resumes a run that is over
  KEYS[4] usage:<sessionKey>     optional: the session's token totals (hash input, output), added to when
                                 this decides
  ARGV[1] runId
  ARGV[2] the record's TTL, seconds
  ARGV[3] attempt ('' for any): only this attempt may decide
  ARGV[4] a token of this call (its retries send the same), kept in field decidedBy
  ARGV[5] input tokens to add to KEYS[4] (0 for none)
  ARGV[6] output tokens to add to KEYS[4] (0 for none)
  ARGV[7..] the outcome's fields (RunRecords.outcomeFields)
]]
local state = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'decidedBy')
if state[1] ~= 'running' and state[1] ~= 'queued' then
  if state[3] == ARGV[4] then return 1 end
  return 0
end
if ARGV[3] ~= '' and state[2] ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], 'decidedBy', ARGV[4], unpack(ARGV, 7))
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
if KEYS[4] and tonumber(ARGV[5]) > 0 then redis.call('HINCRBY', KEYS[4], 'input', ARGV[5]) end
if KEYS[4] and tonumber(ARGV[6]) > 0 then redis.call('HINCRBY', KEYS[4], 'output', ARGV[6]) end
return 1
