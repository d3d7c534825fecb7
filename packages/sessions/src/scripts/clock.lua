--[[
  clock(slot) -> Redis's TIME {seconds, microseconds}
  KEYS[1] <prefix>:clock, never written: a key of the installation, whose hash tag names its slot: on a Redis Cluster the clock read is
          the one of the node whose scripts take the claims, not a random node's (TIME names no key).
]]
return redis.call('TIME')
