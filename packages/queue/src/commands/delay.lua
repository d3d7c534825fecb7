--[[
  delay(own, nb, sched, delayed, att; token, key, delayMs, now, graceMs, undoItemId) -> 1, or
  error LOST. Ends the drain for `delayMs`: the key cannot be claimed before (nb), and it goes on the
  `delayed` zset, from which promote.lua moves it to `ready` when the delay is over (wake-up fused).
  With undoItemId (not ''): that head item's last attempt is taken back (being told to wait is not a
  failure of the item; see claim-next.lua for the attempts record).
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('LOST') end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
redis.call('DEL', KEYS[1])
local now, ms = tonumber(ARGV[4]), tonumber(ARGV[3])
redis.call('ZADD', KEYS[3], now + ms + tonumber(ARGV[5]), ARGV[2])
redis.call('ZADD', KEYS[4], now + ms, ARGV[2])
if ARGV[6] ~= '' then
  local record = redis.call('GET', KEYS[5])
  if record then
    local cut = string.find(record, '|', 1, true)
    local n = cut and tonumber(string.sub(record, 1, cut - 1)) or 0
    if cut and string.sub(record, cut + 1) == ARGV[6] and n > 1 then
      redis.call('SET', KEYS[5], (n - 1) .. '|' .. ARGV[6])
    else
      redis.call('DEL', KEYS[5])
    end
  end
end
return 1
