--[[
  Included (`--- @include "window-count"`) by the scripts that count requests in fixed windows:
  include/open-request.lua, create-session-6.lua, record-failed-lookup-3.lua. Each bucket key names its window (the caller puts the window
  number in it), so a bucket is a plain counter that expires.

  countInWindow(key, windowMs) adds one to the bucket KEYS[key] and answers its count; a new bucket expires after two
  windows (windowMs, ms), long enough to outlive its own.
]]
local function countInWindow(key, windowMs)
  local count = redis.call('INCR', KEYS[key])
  if count == 1 then
    redis.call('PEXPIRE', KEYS[key], windowMs * 2)
  end
  return count
end
