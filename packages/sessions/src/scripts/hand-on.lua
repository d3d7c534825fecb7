--[[
  handOn(steer, writer, handing-on, q, sched, ready, own, att;
         runId, token, handOnLeaseMs, now, graceMs, sessionKey, laneLeaseMs) -> {ended, woke}
  The end of a run's hand-on in one step: the messages steered into the run that it never took move, in
  order, to the end of its session's lane (as a push of them would: each the lane item "<runId>|<JSON>"
  that admission would have queued, and the session owed a drain, see owe_drain, from @hub/queue's
  owe-drain.lua, prepended to this script), and the run's activity ends (its writer hash's field active,
  if still this run). No message is ever taken without being queued in the same step, so a process
  frozen mid-hand-on cannot queue one after a later one nor lose one.

  KEYS[1] steer:<runId> (list of the steered requests' JSON, see admit.lua)
  KEYS[2] writer:<sessionKey> (the running run: fields active, activeUntil)
  KEYS[3] handing-on:<runId>, the run's hand-on lease (the holder's token, see @hub/queue's lease/hold.lua)
  KEYS[4..8] the session lane's list, schedule, ready list, lease and head's attempts (`pushKeys`)

  ARGV[1] runId   ARGV[2] this process's hand-on lease token   ARGV[3] the hand-on lease (ms)
  ARGV[4] now (ms)   ARGV[5] the lane's grace (ms)   ARGV[6] sessionKey (the lane's key)   ARGV[7] the lane's lease (ms)

  Returns {0, 0} and does nothing when another process holds the hand-on lease (it took over: it hands
  the rest on); else the lease is renewed (taken again if it ran out and nobody took it) and the step
  returns {1, woke}: woke 1 when the session was put on the lane's ready list (a drain was not owed before).
]]
local holder = redis.call('GET', KEYS[3])
if holder and holder ~= ARGV[2] then return {0, 0} end
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])

-- A steered request's runId. cjson refuses JSON that JSON.stringify writes for a lone surrogate (half an
-- emoji in a sender's name or a file's: only the text is normalized), so such a request is read by its
-- text: the first `"runId":"` in it is a key, as a quote inside a string value is escaped (\").
local function run_id(json)
  local read, request = pcall(cjson.decode, json)
  if read and type(request) == 'table' and type(request.runId) == 'string' then return request.runId end
  return string.match(json, '"runId":"([^"\\]+)"')
end

local steered = redis.call('LRANGE', KEYS[1], 0, -1)
local woke = 0
if #steered > 0 then
  -- An item without a runId is no request admission steered (nothing could run it): left out, so that it
  -- cannot hold back the others.
  local items = {}
  for _, json in ipairs(steered) do
    local runId = run_id(json)
    if runId then items[#items + 1] = runId .. '|' .. json end
  end
  for _, item in ipairs(items) do
    redis.call('RPUSH', KEYS[4], item)
  end
  redis.call('DEL', KEYS[1])
  if #items > 0 then
    woke = owe_drain(KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6],
      '', tonumber(ARGV[7]), nil)
  end
end
if redis.call('HGET', KEYS[2], 'active') == ARGV[1] then redis.call('HDEL', KEYS[2], 'active', 'activeUntil') end
return {1, woke}
