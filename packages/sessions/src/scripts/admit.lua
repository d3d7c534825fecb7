--[[
  admit: one inbound message's admission, written all together or not at all,
  so no crash can leave a message marked but never queued, or queued but
  admitted again (shared/DESIGN.md, invariant 10).

  KEYS[1] dedupe mark of the platform message (string; written for a context-only message, which has no
          run record: a run's record, kept longer than the mark, is its mark)
  KEYS[2] run record run:<runId> (hash); its existence means "already admitted"
  KEYS[3] the session's writer hash: its running run is field active, until field activeUntil (ms), and
          its queue mode field queueMode
  KEYS[4] the session lane's list (mb:runs:q:<sessionKey>)
  KEYS[5] the session lane's schedule (mb:runs:sched, zset)
  KEYS[6] the session lane's ready list (mb:runs:ready): a session owed a drain from now on is put
          there in this step (the wake-up fused, as in @hub/queue's push.lua)
  KEYS[7] the session's collected batch (collect:<sessionKey>)
  KEYS[8] the session's "collect run queued" flag (collect-pending:<sessionKey>)
  KEYS[9] the session lane's lease (mb:runs:own:<sessionKey>)   KEYS[10] its head's attempts (mb:runs:att:<sessionKey>)
  KEYS[11..] token buckets to take one token from, in order, e.g. sender then chat (take_token, from
           @hub/queue's token-bucket.lua, is prepended to this script, and owe_drain, from owe-drain.lua)

  ARGV[1] runId            ARGV[2] sessionKey         ARGV[3] now (ms)
  ARGV[4] dedupe TTL (s)   ARGV[5] run record TTL (s; also a steered or collected message's) ARGV[6] lane grace (ms)
  ARGV[7] default queue mode
  ARGV[8] kind: "run" (queue mode applies), "queued" (always its own lane item), "context" (no run record)
  ARGV[9] the lane item ("<runId>|<request JSON>"; what steering and collecting store is its JSON, and the
          collect run's item is it with collect = true)
  ARGV[10] key prefix (for the running run's record, where a steer or a stop is marked, and its steer list)
  ARGV[11] a claim token ('' none): a session nobody owes a drain is claimed for this process's runner
           instead of woken (see owe-drain.lua)   ARGV[12] the lane's lease (ms)
  ARGV[13] the run's timeout (ms; '' = never begin here)   ARGV[14] its activity's TTL (ms)
  ARGV[15] the lowest generation a writer claim taken here may take (the time in ms, see begin.lua)
  ARGV[16] who sent it ("<channel>:<senderId>", kept in the run record as field sender: the gateway answers
           a repeated chat.send's recorded text to a client without the read scope only if it sent it;
           '' for a platform message's run, which nobody asks for by key)
  ARGV[17..] per bucket (KEYS[11..]): capacity, then refill per ms

  Returns {outcome, woke[, attempt, generation, previous writer, touched, previous generation]}: outcome is duplicate |
  rate_limited | queued | steered | collected | interrupted; woke 1 when this step put the session on the
  lane's ready list (a drain was not owed before), or the lane's head item when it claimed the session
  for this process (ARGV[11]). A run (kind "run") claimed so with ARGV[13] given is also begun in this
  step, as begin.lua would begin it (record running, attempt 1, the session's running run and writer
  claim): the values after woke are begin.lua's, for the runner that starts it here.
]]
if redis.call('EXISTS', KEYS[1], KEYS[2]) > 0 then
  return {'duplicate', 0}
end

-- Flood limits, after dedupe (a redelivery spends no token) and before any write (a refused message
-- leaves no mark, like the separate take script that shares these buckets).
local now = tonumber(ARGV[3])
for i = 11, #KEYS do
  local capacity = tonumber(ARGV[17 + (i - 11) * 2])
  local rate = tonumber(ARGV[18 + (i - 11) * 2])
  if not take_token(KEYS[i], capacity, rate, now) then return {'rate_limited', 0} end
end

-- Owed already (the session is in sched: a drainer or a wake-up will take the item) or owed from now on.
local function enqueue(item)
  -- The lane held nothing before: this item is its head.
  local head = redis.call('RPUSH', KEYS[4], item) == 1 and item or nil
  return owe_drain(KEYS[4], KEYS[5], KEYS[6], KEYS[9], KEYS[10], now, tonumber(ARGV[6]), ARGV[2], ARGV[11],
    tonumber(ARGV[12]), head)
end

-- What steering and collecting store: the request's JSON, from the lane item.
local function request_json()
  return string.sub(ARGV[9], #ARGV[1] + 2)
end

local function record(...)
  if ARGV[16] == '' then
    redis.call('HSET', KEYS[2], 'runId', ARGV[1], 'sessionKey', ARGV[2], 'startedAt', ARGV[3], ...)
  else
    redis.call('HSET', KEYS[2], 'runId', ARGV[1], 'sessionKey', ARGV[2], 'startedAt', ARGV[3], 'sender', ARGV[16], ...)
  end
  redis.call('EXPIRE', KEYS[2], ARGV[5])
end

if ARGV[8] == 'context' then
  redis.call('SET', KEYS[1], 'accepted', 'EX', ARGV[4])
  return {'queued', enqueue(ARGV[9])}
end
if ARGV[8] ~= 'run' then
  record('status', 'queued', 'attempt', 0)
  return {'queued', enqueue(ARGV[9])}
end

local running = redis.call('HMGET', KEYS[3], 'active', 'activeUntil', 'runId', 'generation', 'touched', 'queueMode')
local active = running[1]
if not active or active == ARGV[1] or (tonumber(running[2]) or 0) <= now then
  local woke = enqueue(ARGV[9])
  if type(woke) ~= 'string' or ARGV[13] == '' then
    record('status', 'queued', 'attempt', 0)
    return {'queued', woke}
  end
  -- Claimed for this process's runner, which starts it at once: begun here (begin.lua's writes).
  record('status', 'running', 'attempt', 1, 'timeoutMs', ARGV[13])
  local generation = math.max((tonumber(running[4]) or 0) + 1, tonumber(ARGV[15]))
  redis.call('HSET', KEYS[3], 'runId', ARGV[1], 'generation', generation, 'active', ARGV[1],
    'activeUntil', now + tonumber(ARGV[14]))
  return {'queued', woke, 1, generation, running[3] or '', running[5] or '', running[4] or ''}
end
record('status', 'queued', 'attempt', 0)
local mode = running[6] or ARGV[7]
-- The running run's record: a steer or a stop is marked there, read with the rest of it (settle.lua, begin.lua).
local activeRecord = ARGV[10] .. ':run:' .. active
if (mode == 'steer' or mode == 'interrupt') and redis.call('EXISTS', activeRecord) == 0 then
  -- No record to mark (it expired): the message runs after it, as in queue mode.
  return {'queued', enqueue(ARGV[9])}
end
if mode == 'steer' then
  local steer = ARGV[10] .. ':steer:' .. active
  redis.call('RPUSH', steer, request_json())
  -- Kept as long as the message's own record: a run interrupted by a long outage still hands it on. So
  -- is the running run's record, whose mark makes its settle look at the list.
  redis.call('EXPIRE', steer, ARGV[5])
  redis.call('HSET', activeRecord, 'steered', 1)
  redis.call('EXPIRE', activeRecord, ARGV[5])
  return {'steered', 0}
elseif mode == 'collect' then
  -- The batch and its flag are kept as long as the messages' own records, as a steer list is.
  redis.call('RPUSH', KEYS[7], request_json())
  redis.call('EXPIRE', KEYS[7], ARGV[5])
  if redis.call('SET', KEYS[8], '1', 'NX', 'EX', ARGV[5]) then
    -- The collect run's item: the request with collect = true (the later key wins where it is read).
    return {'collected', enqueue(string.sub(ARGV[9], 1, -2) .. ',"collect":true}')}
  end
  return {'collected', 0}
elseif mode == 'interrupt' then
  redis.call('HSET', activeRecord, 'stop', 'aborted')
  redis.call('PUBLISH', ARGV[10] .. ':run-stop', cjson.encode({runId = active, status = 'aborted'}))
  return {'interrupted', enqueue(ARGV[9])}
end
return {'queued', enqueue(ARGV[9])}
