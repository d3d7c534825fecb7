--[[
  takeCollected(list, pending, runBatch; ttl) -> the run's batch (moved from the session's list the first
  time, so a resumed attempt of the run finds the same batch)

  KEYS[1] the session's collected messages (collect:<sessionKey>)
  KEYS[2] the session's "collect run queued" flag (collect-pending:<sessionKey>), cleared with the move
  KEYS[3] the run's batch (collected:<runId>)
  ARGV[1] how long the run's batch is kept (s): as long as the messages' own records

  Returns the batch's requests (their JSON), oldest first; empty when there was nothing to take.
]]
if redis.call('EXISTS', KEYS[3]) == 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[3])
  redis.call('EXPIRE', KEYS[3], ARGV[1])
  redis.call('DEL', KEYS[2])
end
return redis.call('LRANGE', KEYS[3], 0, -1)
