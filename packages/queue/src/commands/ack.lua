--[[
  ack(own, q, sched, att, ready[, group]; token, itemId, key, renewMs, now, outcome, groupTtl, channel,
  groupName, yield, graceMs, groupTotal, heardHere): an item's ack and the next item's hand-out, alone
  in its step (see ack-next.lua, prepended, for the keys, the arguments and the result).
]]
return ack_next(KEYS, ARGV)
