--[[
  owe_drain(q, sched, ready, own, att, now, graceMs, key, token, leaseMs, head) -> after a push appended items
  to list q, in the push's own step (`head`: the first item pushed when the list held nothing before, which
  the push knows from RPUSH's length; else nil, and a claim reads the head): 0 when a drain is owed already (a drainer or a wake-up will take the
  items); else the key is owed a drain from now on and either
  - 1: it is put on `ready` for a drain worker (the wake-up fused), deadline now + graceMs, or,
  - with a claim `token` (not ''): its head item, claimed for the pushing process, which drains the key
    itself (no wake-up, no separate claim): lease `own` (leaseMs), deadline now + leaseMs, and the head's
    attempt 1 in `att` (see claim-next.lua). A key nobody owes a drain has no drainer, so the claim
    cannot take a key from one; a lease there all the same (NX) leaves the items to its holder.
  Prepended to push.lua and fenced-push.lua (see scripts.ts) and to the session lane's admission
  (sessions/src/scripts/admit.lua), which owes its session a drain in its own step, and to a run's hand-on
  (sessions/src/scripts/hand-on.lua, hand-on-one.lua), which queues its messages in its session's lane.
]]
local function owe_drain(q, sched, ready, own, att, now, graceMs, key, token, leaseMs, head)
  if token == '' then
    if redis.call('ZADD', sched, 'NX', now + graceMs, key) == 0 then return 0 end
    redis.call('RPUSH', ready, key)
    return 1
  end
  if redis.call('ZADD', sched, 'NX', now + leaseMs, key) == 0 then return 0 end
  if not redis.call('SET', own, token, 'PX', leaseMs, 'NX') then return 0 end
  head = head or redis.call('LINDEX', q, 0)
  redis.call('SET', att, '1|' .. string.sub(head, 1, string.find(head, '|', 1, true) - 1))
  return head
end
