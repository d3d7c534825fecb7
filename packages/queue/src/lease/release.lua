--[[
  lease release: gives a connection lease up, only if the caller still holds it
  (a holder that lost it while frozen must not end its successor's lease).

  KEYS[1] the lease (string: the holder's token)
  ARGV[1] the holder's token

  Result: 1 released, 0 not held by the caller (nothing changed).
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
