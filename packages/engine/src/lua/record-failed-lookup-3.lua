--[[
  Counts a failed task lookup (unknown, expired or another owner's id) in the caller's failed-lookup buckets and
  in the security counters, so that a burst of guesses is throttled by touch-session-6.lua.

  KEYS[1] the principal's failed-lookup bucket of this window
  KEYS[2] the client address's failed-lookup bucket of this window
  KEYS[3] the hash of security counters

  ARGV[1] the arguments, JSON:
    windowMs  window length, ms
    counter   the security counter to increment ("failed_lookups")

  Returns {the principal bucket's count, the address bucket's count}.
]]
--- @include "window-count"
local args = cjson.decode(ARGV[1])
local count = countInWindow(1, args.windowMs)
local addressCount = countInWindow(2, args.windowMs)
redis.call('HINCRBY', KEYS[3], args.counter, 1)
return {count, addressCount}
