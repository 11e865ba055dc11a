--[[
  Lets a principal's job run if the principal is under its caps (MAX_RUNNING_PER_OWNER over all tools, the tool's
  maxRunningPerOwner), else parks it. A run holds a lease in the principal's sets that its worker renews; a crashed
  worker's leases run out, so its slots come back by themselves.

  KEYS[1] sorted set: the principal's runs over all tools (member: <queue>:<jobId>, score: lease expiry, epoch ms)
  KEYS[2] sorted set: the principal's runs of this tool (the same)
  KEYS[3] sorted set: the principal's parked jobs (member: <queue>:<jobId>, score: when first parked)
  KEYS[4] set: principals with parked jobs

  ARGV[1] the arguments, JSON:
    member     the run's member
    now        epoch ms
    leaseMs    the lease's length, ms
    capAll     the cap over all tools (0: none)
    capTool    the cap for this tool (0: none)
    principal  the principal

  Returns {"ok", runningAll, runningTool} when admitted (counts include this run), {"parked", runningAll,
  runningTool} when parked.
]]
--- @include "replies"
local args = cjson.decode(ARGV[1])
local member, now = args.member, args.now
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
-- A job run again (after its worker died) holds its own old lease: it does not wait behind itself.
local all = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], member) then all = all - 1 end
local tool = redis.call('ZCARD', KEYS[2])
if redis.call('ZSCORE', KEYS[2], member) then tool = tool - 1 end
if (args.capAll > 0 and all >= args.capAll) or (args.capTool > 0 and tool >= args.capTool) then
  redis.call('ZADD', KEYS[3], 'NX', now, member)
  redis.call('SADD', KEYS[4], args.principal)
  return {Reply.PARKED, all, tool}
end
local lease = args.leaseMs
redis.call('ZADD', KEYS[1], now + lease, member)
redis.call('ZADD', KEYS[2], now + lease, member)
redis.call('PEXPIRE', KEYS[1], lease * 2)
redis.call('PEXPIRE', KEYS[2], lease * 2)
redis.call('ZREM', KEYS[3], member)
if redis.call('ZCARD', KEYS[3]) == 0 then redis.call('SREM', KEYS[4], args.principal) end
return {Reply.OK, all + 1, tool + 1}
