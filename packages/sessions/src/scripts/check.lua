--[[
  check(writer; runId, generation) -> '' when still the writer, else the current writer's runId (or '-')
]]
local current = redis.call('HMGET', KEYS[1], 'runId', 'generation')
if current[1] == ARGV[1] and current[2] == ARGV[2] then return '' end
return current[1] or '-'
