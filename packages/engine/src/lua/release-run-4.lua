--[[
  Ends a principal's run (admit-run-4.lua) and hands back the principal's longest-parked job, for the caller to
  start (BullMQ promote); the job is admitted or parked again when it starts.

  KEYS[1] sorted set: the principal's runs over all tools
  KEYS[2] sorted set: the principal's runs of the run's tool
  KEYS[3] sorted set: the principal's parked jobs
  KEYS[4] set: principals with parked jobs

  ARGV[1] the arguments, JSON:
    member     the run's member (<queue>:<jobId>)
    principal  the principal

  Returns the parked member to start, or false.
]]
local args = cjson.decode(ARGV[1])
redis.call('ZREM', KEYS[1], args.member)
redis.call('ZREM', KEYS[2], args.member)
local next = redis.call('ZPOPMIN', KEYS[3])
if redis.call('ZCARD', KEYS[3]) == 0 then redis.call('SREM', KEYS[4], args.principal) end
if #next == 0 then return false end
return next[1]
