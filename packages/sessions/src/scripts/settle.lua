--[[
  settle(record, writer, steer, usage, answer[, the lane's ack keys];
         runId, attempt, generation, inputTokens, outputTokens, n, field, value, ...[, ack args, begin args])
  A run's end in one step: its terminal outcome decided once (as finish.lua), its writer claim
  released unless a newer claim holds it (as release.lua), its token usage added to the session's
  with the outcome (not again by a retry, nor for an outcome decided elsewhere), its staged answer
  deleted with the outcome it staged,
  and its activity ended when nothing was steered in late (else SessionActivity.end's hand-on ends it).
  Given the session lane's ack (ack_next, from @hub/queue's ack-next.lua, is prepended to this script),
  the run's lane item is acked in the same step, and the next run it hands out is begun there, as
  begin.lua would begin it, for the runner that starts it next.

  KEYS[1] run record run:<runId>
  KEYS[2] writer:<sessionKey> (also the running run: fields active, activeUntil)
  KEYS[3] steer:<runId> (and steer:<runId>:settled, what settle took from it)
  KEYS[4] usage:<sessionKey> (hash input, output)
  KEYS[5] answer:<runId> (the answer its last push staged; see RunRecords.answerNote)
  KEYS[6..] the lane item's ack keys (see ack-next.lua), if any

  ARGV[2] attempt that must still be current ('' = any); ARGV[6] n, how many ARGV after it are the
  record's outcome fields and values; then, with ack keys, the 13 ack arguments (see ack-next.lua),
  then the next run's timeout (ms), its activity's TTL (ms), the prefix of run record keys (the next
  run's is <prefix><runId>) and the lowest generation its writer claim may take (see begin.lua).

  Returns {decided 1|0 (1 also to a retry of the step that decided it: same status and endedAt),
  released 1|0, steered requests the run never took (taken: the caller queues them again, and the run
  stays active until it has), the record's startedAt or false},
  and with ack keys (and nothing steered in late) also: 'lost' (the lane's lease is not ours: nothing
  acked), or 'acked', ack_next's answer, and when the next run was begun here {its runId, attempt, generation, previous writer or '',
  stop mark or '', touched, previous generation or ''}, as begin.lua's values.
]]
local n = tonumber(ARGV[6])
-- Where the lane's ack arguments start (with ack keys), then the next run's begin arguments.
local first = 7 + n
-- One of this step's outcome fields (ARGV[7..6+n], field/value pairs), or nil.
local function outcome(field)
  for i = 7, 5 + n, 2 do
    if ARGV[i] == field then return ARGV[i + 1] end
  end
end

local state = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'startedAt', 'steered', 'endedAt')
local writes = (state[1] == 'running' or state[1] == 'queued') and (ARGV[2] == '' or state[2] == ARGV[2])
-- A retry of this step (its first answer lost): that execution decided the outcome.
local retried = not writes and state[5] and state[1] == outcome('status') and state[5] == outcome('endedAt')
-- The record keeps the TTL admission (or its first start) gave it.
if writes and n > 0 then redis.call('HSET', KEYS[1], unpack(ARGV, 7, 6 + n)) end
-- Written with the outcome it was staged for (an older attempt's late settle leaves a newer one's alone).
if writes then redis.call('DEL', KEYS[5]) end
local decided = (writes or retried) and 1 or 0
local writer = redis.call('HMGET', KEYS[2], 'runId', 'generation', 'active', 'touched', 'sessionId')
-- Only a run that had a message steered in (admit.lua marks its record) can have any left. They move to
-- <steer>:settled, where a retry of this step finds them again, after any steered since; kept as long as
-- the steer list was (their own records' TTL, which admit.lua gave it).
local steered = {}
if state[4] then
  local stash = KEYS[3] .. ':settled'
  steered = redis.call('LRANGE', KEYS[3], 0, -1)
  if #steered > 0 then
    local keep = redis.call('TTL', KEYS[3])
    redis.call('RPUSH', stash, unpack(steered))
    redis.call('EXPIRE', stash, math.max(keep, 86400))
    redis.call('DEL', KEYS[3])
  end
  if retried then steered = redis.call('LRANGE', stash, 0, -1) end
end
-- Counted with the outcome it belongs to, once: a retried step adds nothing again.
if writes and tonumber(ARGV[4]) > 0 then redis.call('HINCRBY', KEYS[4], 'input', ARGV[4]) end
if writes and tonumber(ARGV[5]) > 0 then redis.call('HINCRBY', KEYS[4], 'output', ARGV[5]) end
local mine = writer[1] == ARGV[1] and writer[2] == ARGV[3]
local settled = {decided, mine and 1 or 0, steered, state[3]}

-- The next run the lane's ack handed out ("<runId>|<request JSON>"), begun here as begin.lua would begin
-- it when this run's claim was released to it with nothing steered in late: {begin.lua's values} and
-- true, or nil. Only a plain run (the runner begins it first thing, where a command, a context-only
-- message or a collected batch may end before); JSON cjson cannot read (a lone surrogate escape) is left
-- to the runner, with no error after this step's writes. A retry of this step (its first answer lost)
-- finds that run begun by its first execution (only the lane's lease holder, which ack_next checked,
-- hands it out) and tells its start again: the values and false.
local function begin_next(head)
  local cut = string.find(head, '|', 1, true)
  local runId = string.sub(head, 1, cut - 1)
  local again = not mine and writer[1] == runId and writer[3] == runId
  if not (mine or again) or #steered > 0 then return nil end
  local read, request = pcall(cjson.decode, string.sub(head, cut + 1))
  if not read or type(request) ~= 'table' or request.command or request.contextOnly or request.collect then
    return nil
  end
  local record = ARGV[first + 15] .. runId
  local nextRun = redis.call('HMGET', record, 'status', 'attempt', 'stop')
  if again then
    if nextRun[1] ~= 'running' or nextRun[2] ~= '1' then return nil end
    return {runId, 1, tonumber(writer[2]), '', nextRun[3] or '', writer[4] or '', ''}, false
  end
  if nextRun[1] ~= 'queued' then return nil end
  local attempt = (tonumber(nextRun[2]) or 0) + 1
  local fields = {'status', 'running', 'attempt', attempt, 'timeoutMs', ARGV[first + 13]}
  -- A first start is the run's start (begin.lua's startedAt).
  if attempt == 1 then fields[7], fields[8] = 'startedAt', tonumber(ARGV[first + 4]) end
  redis.call('HSET', record, unpack(fields))
  -- A new generation as begin.lua takes one (one more, and at least the given floor: the time).
  local generation = math.max(tonumber(writer[2]) + 1, tonumber(ARGV[first + 16]))
  return {runId, attempt, generation, '', nextRun[3] or '', writer[4] or '', writer[2]}, true
end

-- The lane's ack, and the next run begun in the same step; not with messages steered in late: the caller
-- queues them first and the lane's worker acks after, so a crash in between leaves the run's lane item
-- to be handed out again and found over, which hands them on from the stash.
local begun, wrote = nil, false
if KEYS[6] and #steered == 0 then
  local ack = ack_next({KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]}, {unpack(ARGV, first, first + 12)})
  if type(ack) == 'table' and ack.err then
    table.insert(settled, 'lost')
  else
    table.insert(settled, 'acked')
    table.insert(settled, ack)
    if type(ack) == 'string' then begun, wrote = begin_next(ack) end
    if begun then table.insert(settled, begun) end
  end
end

-- The writer hash: the claim released (or handed to the next run), the activity ended or handed on.
if wrote then
  redis.call('HSET', KEYS[2], 'runId', begun[1], 'generation', begun[3], 'active', begun[1],
    'activeUntil', tonumber(ARGV[first + 4]) + tonumber(ARGV[first + 14]))
  if writer[5] then redis.call('HDEL', KEYS[2], 'sessionId') end
  return settled
end
-- The run's activity ends with it unless messages were steered in late (the caller queues them first).
local ending = #steered == 0 and writer[3] == ARGV[1]
if mine then
  if ending then
    redis.call('HDEL', KEYS[2], 'runId', 'sessionId', 'active', 'activeUntil')
  else
    redis.call('HDEL', KEYS[2], 'runId', 'sessionId')
  end
elseif ending then
  redis.call('HDEL', KEYS[2], 'active', 'activeUntil')
end
return settled
