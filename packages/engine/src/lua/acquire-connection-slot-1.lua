--[[
  Opens one SSE stream of a session, if the session has fewer than the limit open (across every api replica).
  Each open stream holds a lease that its replica renews; a replica that dies stops renewing, and its streams'
  slots free themselves when their leases run out.

  KEYS[1] sorted set: the session's open streams, scored by lease expiry (epoch ms)

  ARGV[1] the arguments, JSON:
    streamId  the stream's id
    now       epoch ms
    leaseMs   the lease's length, ms
    limit     the most streams the session may have open

  Returns {"ok", count} when opened (count includes this stream), {"full", count} when the session is at the limit.
]]
--- @include "replies"
local args = cjson.decode(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', args.now)
local count = redis.call('ZCARD', KEYS[1])
if count >= args.limit then
  return {Reply.FULL, count}
end
redis.call('ZADD', KEYS[1], args.now + args.leaseMs, args.streamId)
redis.call('PEXPIRE', KEYS[1], args.leaseMs * 2)
return {Reply.OK, count + 1}
