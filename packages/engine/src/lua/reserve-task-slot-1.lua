--[[
  Admits one more unfinished task for an owner, or refuses it, atomically: the cap on concurrent tasks per
  requestor (T-RSRC-1). The set holds the owner's unfinished tasks scored by their expiry time; the transition
  script removes a task when it becomes terminal, and entries past their expiry are dropped here, so a task that
  left without a terminal transition (expired, purged) frees its slot by its ttl at the latest.

  KEYS[1] sorted set: the owner's unfinished tasks, scored by expiry (epoch ms)

  ARGV[1] task id
  ARGV[2] its expiry, epoch ms
  ARGV[3] now, epoch ms
  ARGV[4] the most unfinished tasks the owner may have

  Returns {1, count} when admitted (count includes the new task), {0, count} when the owner is at the limit.
]]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[4]) then
  return {0, count}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
-- The set lives as long as its longest-lived task.
local ttl = redis.call('PEXPIRETIME', KEYS[1])
if ttl < tonumber(ARGV[2]) then
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
end
return {1, count + 1}
