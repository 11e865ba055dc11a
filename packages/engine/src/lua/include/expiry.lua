--[[
  Included (`--- @include "expiry"`) by the scripts that keep a key alive as long as the longest-lived of its members
  (create-task-6.lua: the owner's task index and cap set, a tool's fair-order hash; create-session-6.lua and
  refresh-session-3.lua: the live-session sets of the caps).

  expireNotBefore(key, at, hasExpiry) makes KEYS[key] live until `at` (epoch ms) at least, never shortening a later
  expiry. What the caller knows of the key saves commands: hasExpiry true, the key has an expiry (a PEXPIREAT GT
  suffices); false, the key was just made (it has none yet: a plain PEXPIREAT); nil, unknown (GT moves an expiry only
  later and leaves a key without one as it is: NX then gives that one its first, a second command only when GT did
  nothing).
]]
local function expireNotBefore(key, at, hasExpiry)
  if hasExpiry == false then
    redis.call('PEXPIREAT', KEYS[key], at)
  elseif redis.call('PEXPIREAT', KEYS[key], at, 'GT') == 0 and hasExpiry == nil then
    redis.call('PEXPIREAT', KEYS[key], at, 'NX')
  end
end
