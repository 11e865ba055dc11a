--[[
  Sets (or deletes) a string key only if it still holds what the caller last read: a lease renewed or given back by
  its holder only, an upstream session id replaced by the first worker that found it gone (docs/gateway.md).

  KEYS[1] string: the key

  ARGV[1] the arguments, JSON:
    expected  the value the key must hold; absent: the key must not exist
    value     the value to set; absent: delete the key
    ttlMs     the key's lifetime from now, ms (with value)

  Returns {"ok"} when done, {"changed", current} otherwise (current: the key's value, or false when absent).
]]
--- @include "replies"
local args = cjson.decode(ARGV[1])
local current = redis.call('GET', KEYS[1])
if (args.expected == nil and current ~= false) or (args.expected ~= nil and current ~= args.expected) then
  return {Reply.CHANGED, current}
end
if args.value == nil then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], args.value, 'PX', args.ttlMs)
end
return {Reply.OK}
