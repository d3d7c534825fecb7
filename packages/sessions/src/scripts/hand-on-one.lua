--[[
  handOnOne(handing-on, handed, q, sched, ready, own, att;
            token, handOnLeaseMs, now, graceMs, sessionKey, laneLeaseMs, handedTtlMs, runId, item) -> {held, woke}
  One message a run's end hands on ahead of its untaken steered ones (what its settle moved aside, what it
  took, its collected batch: lists read without taking, see SessionActivity.end's `first`), queued at the
  end of its session's lane (as a push of it would: the lane item "<runId>|<JSON>", and the session owed a
  drain, see owe_drain, from @hub/queue's owe-drain.lua, prepended to this script) and recorded as handed
  on, in one step, only while this process's token holds the run's hand-on lease. A process frozen past
  the lease writes nothing when it wakes, and the process that took over, reading the same lists, does
  not queue again what the frozen one queued (nor does a retry after a lost answer).

  KEYS[1] handing-on:<runId>, the run's hand-on lease (the holder's token, see @hub/queue's lease/hold.lua)
  KEYS[2] steer:<runId>:handed (set of the runIds this run's end handed on)
  KEYS[3..7] the session lane's list, schedule, ready list, lease and head's attempts (`pushKeys`)

  ARGV[1] this process's hand-on lease token   ARGV[2] the hand-on lease (ms)   ARGV[3] now (ms)
  ARGV[4] the lane's grace (ms)   ARGV[5] sessionKey (the lane's key)   ARGV[6] the lane's lease (ms)
  ARGV[7] how long the handed set is kept (ms)   ARGV[8] the message's runId   ARGV[9] its lane item

  Returns {0, 0} and writes nothing unless the lease holds this token (another process took it over, or it
  ran out: the caller starts over under the lease again, see SessionActivity.end); else the lease is
  renewed and the step returns {1, woke}: woke 1 when the session was put on the lane's ready list (a drain
  was not owed before), 0 also when the message was handed on already (nothing queued).
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0, 0} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('SADD', KEYS[2], ARGV[8]) == 0 then return {1, 0} end
redis.call('PEXPIRE', KEYS[2], ARGV[7])
redis.call('RPUSH', KEYS[3], ARGV[9])
return {1, owe_drain(KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], '',
  tonumber(ARGV[6]), nil)}
