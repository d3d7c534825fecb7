--[[
  take(bucket; capacity, refillPerMs, now) -> 1 if a token was taken, 0 if the bucket is empty.
  take_token comes from @hub/queue's token-bucket.lua, shared with the session admission script.
]]
if take_token(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])) then return 1 end
return 0
