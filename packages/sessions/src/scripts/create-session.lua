--[[
  create-session(index, all sessions, transcript; record JSON, header line, updatedAt, sessionKey[, line...])
    -> nil when created (index set, header and any further lines pushed, the key listed), else the key's
       index record (JSON) as it is (nothing written)
  A key's session created only when it has none, in one step: two processes resolving a new key at once end
  on one session (the loser's transcript key is never written). ARGV[5..]: lines that follow the header (a
  run's first lines, when it opens a new session: see RedisSessionStore.open).
]]
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
redis.call('RPUSH', KEYS[3], ARGV[2], unpack(ARGV, 5))
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return nil
