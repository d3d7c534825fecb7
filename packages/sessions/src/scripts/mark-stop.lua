--[[
  markStop(record; status) -> 1 marked, 0 no such run
  A stop asked for a run ("aborted" or "superseded"), kept in its record's field `stop`, where the run's
  start (begin.lua) reads it with the rest of the record: a stop asked before the run started (or before
  an interrupted attempt resumes) still stops it. A run without a record is not marked (no key without a TTL).
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'stop', ARGV[1])
return 1
