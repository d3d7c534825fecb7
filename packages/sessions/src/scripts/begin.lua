--[[
  begin(record, writer;
        runId, sessionKey, now, timeoutMs, ttl, activeTtlMs, generation floor)
  A queued run's start in one step: run record "running" (attempt + 1; startedAt on the first), the
  session's running run (active, until now + activeTtlMs) and the writer claim (a new generation), both in
  the session's writer hash, and the run's stop mark (the record's field `stop`, see mark-stop.lua).

  KEYS[1] run record run:<runId>
  KEYS[2] writer:<sessionKey> (hash runId, generation, touched, active, activeUntil)
  (The runs in flight are the heads of the session lanes: see RunRecords.running.)

  ARGV[7] the lowest generation the claim may take (the time in ms, on Redis's clock): a claim's generation is one more than
          the last one, and at least the time of the claim, so a session's generations stay above the ones
          its transcript has after Redis lost its data or came back older (see generationBase).

  Returns {'over', status} when the run already ended (nothing written),
  {'running', stop} when the record says running: an interrupted attempt, which the caller resumes
  or finalizes through the separate steps (nothing written),
  else {'started', attempt, generation, previous writer runId or '' (released), stop mark or '',
  the writer's "touched" count or '' (writes made outside any claim, see SessionWriters.touch),
  the previous generation or ''}.
]]
local record = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'stop')
local status = record[1]
if status and status ~= 'running' and status ~= 'queued' then return {'over', status} end
local stop = record[3] or ''
if status == 'running' then return {'running', stop} end
local attempt = (tonumber(record[2]) or 0) + 1
if attempt == 1 then
  redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionKey', ARGV[2], 'status', 'running', 'attempt', attempt, 'timeoutMs', ARGV[4], 'startedAt', ARGV[3])
else
  redis.call('HSET', KEYS[1], 'runId', ARGV[1], 'sessionKey', ARGV[2], 'status', 'running', 'attempt', attempt, 'timeoutMs', ARGV[4])
end
-- Admission wrote the record with its TTL, which HSET keeps: only a record begun without one needs it.
if not status then redis.call('EXPIRE', KEYS[1], ARGV[5]) end
local writer = redis.call('HMGET', KEYS[2], 'runId', 'generation', 'touched')
local generation = math.max((tonumber(writer[2]) or 0) + 1, tonumber(ARGV[7]))
redis.call('HSET', KEYS[2], 'runId', ARGV[1], 'generation', generation,
  'active', ARGV[1], 'activeUntil', tonumber(ARGV[3]) + tonumber(ARGV[6]))
return {'started', attempt, generation, writer[1] or '', stop, writer[3] or '', writer[2] or ''}
