--[[
  renewHandOn(handing-on; token, handOnLeaseMs) -> 1 renewed, 0 lost (nothing changed)
  Renews a run's hand-on lease only while it still holds this process's token: a renewal that reaches
  Redis late (sent before a freeze or an outage) must not take the lease again once it ran out, or a
  step of this process read before it lost the lease would get through (see hand-on-one.lua).

  KEYS[1] handing-on:<runId>, the run's hand-on lease (the holder's token, see @hub/queue's lease/hold.lua)
  ARGV[1] this process's token   ARGV[2] the hand-on lease (ms)
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
