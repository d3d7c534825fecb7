--[[
  check(writer; runId, generation) -> '' when still the writer, else the current writer's runId (or '-')
]]
local runId = redis.call('HGET', KEYS[1], 'runId')
if runId == ARGV[1] and redis.call('HGET', KEYS[1], 'generation') == ARGV[2] then return '' end
return runId or '-'
