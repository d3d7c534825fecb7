--[[
  take-steered(steer, taken; ttlMs) -> every message steered into the run so far, taken before or now

  KEYS[1] steer:<runId>          messages steered into the run, not yet taken
  KEYS[2] steer:<runId>:taken    messages the run took (kept ttlMs after the last take)
  ARGV[1] ttlMs

  The messages move from the first list to the second rather than being deleted, so the step can be
  retried after its answer was lost (it answers the same, plus anything steered since) and a resumed
  attempt finds what an attempt killed right after the take had not yet written to the transcript.
]]
local fresh = redis.call('LRANGE', KEYS[1], 0, -1)
if #fresh > 0 then
  redis.call('RPUSH', KEYS[2], unpack(fresh))
  redis.call('DEL', KEYS[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
return redis.call('LRANGE', KEYS[2], 0, -1)
