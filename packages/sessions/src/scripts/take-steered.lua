--[[
  take-steered(steer, taken, fence; ttlMs, fenceField, fenceValue) -> every message steered into the run
  so far, taken before or now; or error FENCED (nothing taken) when the run's writer claim is no longer
  the session's

  KEYS[1] steer:<runId>          messages steered into the run, not yet taken
  KEYS[2] steer:<runId>:taken    messages the run took (kept ttlMs after the last take)
  KEYS[3] the session's writer hash (the fence)
  ARGV[1] ttlMs   ARGV[2] the fence's field   ARGV[3] the value it holds while the run's claim is current

  The messages move from the first list to the second rather than being deleted, so the step can be
  retried after its answer was lost (it answers the same, plus anything steered since) and a resumed
  attempt finds what an attempt killed right after the take had not yet written to the transcript. The
  fence keeps a superseded attempt from taking anything after the attempt that superseded it read the
  taken list (at its start).
]]
if redis.call('HGET', KEYS[3], ARGV[2]) ~= ARGV[3] then return redis.error_reply('FENCED') end
local fresh = redis.call('LRANGE', KEYS[1], 0, -1)
if #fresh > 0 then
  redis.call('RPUSH', KEYS[2], unpack(fresh))
  redis.call('DEL', KEYS[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
return redis.call('LRANGE', KEYS[2], 0, -1)
