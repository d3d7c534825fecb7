--[[
  claimNext(own, nb, sched, q, att; token, leaseMs, now, key) -> {head item, attempt} claimed
  with its first item (claim and peek fused: one round trip), 0 another drainer is alive, -1 waiting
  out a delay, 2 nothing to drain (the key is no longer owed a drain; no lease taken)

  Attempts: string `att` (one per key, read in the same MGET as the lease) holds "<n>|<item id>": its
  head item has been handed to a handler n times. Only the head of a key is ever handed out, and only
  ack-next moves the head on: it hands the next item out without writing the record (it deletes the
  record, with the lease, when the key runs empty), so a record naming another item means the head
  was handed out once, by ack-next.
  Counted here, so a poison item that crashes its drainer still runs out of attempts.
]]
local marks = redis.call('MGET', KEYS[2], KEYS[1], KEYS[5])
if marks[1] then return -1 end
local owner = marks[2]
if owner and owner ~= ARGV[1] then return 0 end
local head = redis.call('LINDEX', KEYS[4], 0)
if not head then
  redis.call('ZREM', KEYS[3], ARGV[4])
  return 2
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
local id = string.sub(head, 1, string.find(head, '|', 1, true) - 1)
local attempt = 1
local record = marks[3]
if record then
  local cut = string.find(record, '|', 1, true)
  if cut and string.sub(record, cut + 1) == id then
    attempt = (tonumber(string.sub(record, 1, cut - 1)) or 0) + 1
  else
    attempt = 2
  end
end
redis.call('SET', KEYS[5], attempt .. '|' .. id)
return {head, attempt}
