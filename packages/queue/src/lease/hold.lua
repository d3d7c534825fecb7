--[[
  lease hold: takes or renews a connection lease for one holder, so exactly one
  hub process holds a single-holder connection (Telegram polling, a Discord
  gateway, a WhatsApp socket) at a time.

  KEYS[1] the lease (string: the holder's token), expires after the lease time
  ARGV[1] the holder's token
  ARGV[2] the lease time (ms)

  Result: 1 when the caller holds the lease now (taken or renewed), 0 when
  another holder has it (returned as {0, token} so the caller can say who).
]]
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return {0, owner} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, ARGV[1]}
