--[[
  sendGate(last, rate; now, intervalMs, perSecond) -> how long to wait (ms) before sending; 0: send now

  A platform write to a reply target (a send, or a live preview's edit or removal) waits out the
  target's pacing interval after its last write, then takes a place within the account's rate for the
  current second, in one step. Nothing is taken while a wait is due (a wait costs nothing): the caller
  waits the answer and asks again. When the write may go, its time is the target's last write (the
  caller writes it again once a send has ended, so the next one counts from the end of a slow send).

  KEYS[1] the target's last write time (string, ms since epoch)
  KEYS[2] the account's send counter for the second `now` falls in (TTL 2 s)
  ARGV[1] now (ms since epoch)
  ARGV[2] the target's least interval between writes (ms; 0: not paced)
  ARGV[3] the account's sends per second (0: no cap)
  ARGV[4] how long the last write time is kept (ms)
]]
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
if interval > 0 then
  local last = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
  if last + interval > now then return last + interval - now end
end
local perSecond = tonumber(ARGV[3])
if perSecond > 0 then
  local count = redis.call('INCR', KEYS[2])
  if count == 1 then redis.call('EXPIRE', KEYS[2], 2) end
  -- Over the cap: the next second.
  if count > perSecond then return 1000 - (now % 1000) + 1 end
end
if interval > 0 then redis.call('SET', KEYS[1], now, 'PX', ARGV[4]) end
return 0
