--[[
  create-session(index, all sessions, transcript; record JSON, header line, updatedAt, sessionKey)
    -> nil when created (index set, header pushed, the key listed), else the key's index record (JSON) as it is
  A key's session created only when it has none, in one step: two processes resolving a new key at once end
  on one session (the loser's transcript key is never written).
]]
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
redis.call('RPUSH', KEYS[3], ARGV[2])
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return nil
