--[[
  start(record[, outsideLane]; runId, sessionKey, now, timeoutMs, ttl, sender) -> attempt, or 0 if the run is
  already over (a record admission wrote as "queued" starts here; startedAt is the first attempt's start).
  sender ('' none): who sent the message, kept in a record this start creates (admission keeps its own).
  KEYS[2], given for a run that is not its session lane's head (a command answered at admission, a
  message absorbed by another run), is the set of such runs in flight (see RunRecords.running).
]]
local status = redis.call('HGET', KEYS[1], 'status')
if status and status ~= 'running' and status ~= 'queued' then return 0 end
local attempt = redis.call('HINCRBY', KEYS[1], 'attempt', 1)
if attempt == 1 then
  redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionKey', ARGV[2], 'status', 'running', 'timeoutMs', ARGV[4], 'startedAt', ARGV[3])
  if ARGV[6] ~= '' and not status then redis.call('HSET', KEYS[1], 'sender', ARGV[6]) end
else
  redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionKey', ARGV[2], 'status', 'running', 'timeoutMs', ARGV[4])
end
redis.call('EXPIRE', KEYS[1], ARGV[5])
if KEYS[2] then redis.call('SADD', KEYS[2], ARGV[1]) end
return attempt
