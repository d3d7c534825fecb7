--[[
  push_items(q, first) -> the first item pushed when list q held nothing before (a claim in the same step can
  take it as the head without reading it), else nil. Appends ARGV[first..] to q, in order, 500 at a time
  (unpack's stack limit). Prepended to push.lua, fenced-push.lua and push-once.lua (see scripts.ts).
]]
local function push_items(q, first)
  local head
  for i = first, #ARGV, 500 do
    local last = math.min(i + 499, #ARGV)
    if redis.call('RPUSH', q, unpack(ARGV, i, last)) == last - i + 1 and i == first then head = ARGV[first] end
  end
  return head
end
