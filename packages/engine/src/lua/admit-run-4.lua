--[[
  Lets a principal's job run if the principal is under its caps (MAX_RUNNING_PER_OWNER over all tools, the tool's
  maxRunningPerOwner), else parks it. A run holds a lease in the principal's sets that its worker renews; a crashed
  worker's leases run out, so its slots come back by themselves.

  KEYS[1] sorted set: the principal's runs over all tools (member: <queue>:<jobId>, score: lease expiry, epoch ms)
  KEYS[2] sorted set: the principal's runs of this tool (the same)
  KEYS[3] sorted set: the principal's parked jobs (member: <queue>:<jobId>, score: when first parked)
  KEYS[4] set: principals with parked jobs

  ARGV[1] member
  ARGV[2] now, epoch ms
  ARGV[3] lease length, ms
  ARGV[4] cap over all tools (0: none)
  ARGV[5] cap for this tool (0: none)
  ARGV[6] principal

  Returns {1, runningAll, runningTool} when admitted (counts include this run), {0, runningAll, runningTool} when
  parked.
]]
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
-- A job run again (after its worker died) holds its own old lease: it does not wait behind itself.
local all = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then all = all - 1 end
local tool = redis.call('ZCARD', KEYS[2])
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then tool = tool - 1 end
local capAll = tonumber(ARGV[4])
local capTool = tonumber(ARGV[5])
if (capAll > 0 and all >= capAll) or (capTool > 0 and tool >= capTool) then
  redis.call('ZADD', KEYS[3], 'NX', now, ARGV[1])
  redis.call('SADD', KEYS[4], ARGV[6])
  return {0, all, tool}
end
local lease = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease * 2)
redis.call('PEXPIRE', KEYS[2], lease * 2)
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('ZCARD', KEYS[3]) == 0 then redis.call('SREM', KEYS[4], ARGV[6]) end
return {1, all + 1, tool + 1}
