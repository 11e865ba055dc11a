--[[
  Opens one SSE stream of a session, if the session has fewer than the limit open (across every api replica).
  Each open stream holds a lease that its replica renews; a replica that dies stops renewing, and its streams'
  slots free themselves when their leases run out.

  KEYS[1] sorted set: the session's open streams, scored by lease expiry (epoch ms)

  ARGV[1] stream id
  ARGV[2] now, epoch ms
  ARGV[3] lease length, ms
  ARGV[4] the most streams the session may have open

  Returns {1, count} when opened (count includes this stream), {0, count} when the session is at the limit.
]]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[4]) then
  return {0, count}
end
redis.call('ZADD', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return {1, count + 1}
