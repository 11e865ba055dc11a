--[[
  Keeps a session that is in use counted under its caps: pushes out when its entries in the principal's and the
  address's live-session sets stop counting. Only existing entries move (a session created while a cap was off
  stays uncounted), and nothing happens once the session is gone (deleted or expired), so a refresh racing a
  DELETE cannot bring an entry back.

  KEYS[1] the session hash
  KEYS[2] the live sessions of the session's owner (sorted set)
  KEYS[3] the live sessions of the address it was initialized from (sorted set)

  ARGV[1] session id
  ARGV[2] when it stops counting from now on, epoch ms

  Returns 1 when refreshed, 0 when the session is gone.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'countedUntil', ARGV[2])
for i = 2, 3 do
  -- XX: only an entry that is there moves (a missing set stays missing); CH: 1 when it moved.
  if redis.call('ZADD', KEYS[i], 'XX', 'CH', ARGV[2], ARGV[1]) == 1 then
    redis.call('PEXPIREAT', KEYS[i], ARGV[2], 'GT')
  end
end
return 1
