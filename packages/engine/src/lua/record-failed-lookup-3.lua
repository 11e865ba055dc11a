--[[
  Counts a failed task lookup (unknown, expired or another owner's id) in the caller's failed-lookup buckets and
  in the security counters, so that a burst of guesses is throttled by touch-session-6.lua.

  KEYS[1] the principal's failed-lookup bucket of this window
  KEYS[2] the client address's failed-lookup bucket of this window
  KEYS[3] the hash of security counters

  ARGV[1] window length, ms
  ARGV[2] the security counter to increment ("failed_lookups")

  Returns the principal bucket's count.
]]
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 2)
end
if redis.call('INCR', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[1]) * 2)
end
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
return count
