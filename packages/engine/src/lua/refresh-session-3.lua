--[[
  Keeps a session that is in use counted under its caps: pushes out when its entries in the principal's and the
  address's live-session sets stop counting. Only existing entries move (a session created while a cap was off
  stays uncounted), and nothing happens once the session is gone (deleted or expired), so a refresh racing a
  DELETE cannot bring an entry back.

  KEYS[1] the session hash
  KEYS[2] the live sessions of the session's owner (sorted set)
  KEYS[3] the live sessions of the address it was initialized from (sorted set)

  ARGV[1] the arguments, JSON:
    sessionId     the session's id
    countedUntil  when it stops counting from now on, epoch ms

  Returns 1 when refreshed, 0 when the session is gone.
]]
--- @include "expiry"
local args = cjson.decode(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'countedUntil', args.countedUntil)
local function refresh(key)
  -- XX: only an entry that is there moves (a missing set stays missing); CH: 1 when it moved, and then the set
  -- has its expiry (create-session-6.lua gave it one).
  if redis.call('ZADD', KEYS[key], 'XX', 'CH', args.countedUntil, args.sessionId) == 1 then
    expireNotBefore(key, args.countedUntil, true)
  end
end
refresh(2)
refresh(3)
return 1
