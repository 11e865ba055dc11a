--[[
  Creates a task record with its index entries in one step, after admitting it under the owner's cap on unfinished
  tasks (T-RSRC-1) when there is one. A refused task leaves no trace; an admitted one is written whole, so a
  reader never sees half a task (invariant 2 starts here).

  The cap's set holds the owner's unfinished tasks scored by their expiry; the transition script removes a task
  when it becomes terminal, and entries past their expiry are dropped here, so a task that left without a terminal
  transition (expired, purged) frees its slot by its ttl at the latest.

  KEYS[1] the task hash
  KEYS[2] sorted set of live (non-terminal) tasks, scored by lastUpdatedAt
  KEYS[3] sorted set of every task, by index member
  KEYS[4] sorted set of expiries
  KEYS[5] the owner's task index (tasks/list); used when ARGV[6] is '1'
  KEYS[6] the owner's unfinished tasks, scored by expiry; used when ARGV[4] is not ''

  ARGV[1] task id
  ARGV[2] its expiry, epoch ms
  ARGV[3] now, epoch ms (its lastUpdatedAt)
  ARGV[4] the most unfinished tasks the owner may have, or '' for no cap
  ARGV[5] its index member
  ARGV[6] '1' when the task is listed in the owner's index (a task, not a plain call)
  ARGV[7] its expiries entry
  ARGV[8...] the hash's field/value pairs

  Returns {1, count} when created (count: the owner's unfinished tasks, 0 without a cap), {0, count} when the
  owner is at the limit.
]]
local expiresAt = ARGV[2]
local count = 0
if ARGV[4] ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', ARGV[3])
  count = redis.call('ZCARD', KEYS[6])
  if count >= tonumber(ARGV[4]) then
    return {0, count}
  end
  redis.call('ZADD', KEYS[6], expiresAt, ARGV[1])
  -- The set lives as long as its longest-lived task: a new set gets this task's expiry, a set with members only a
  -- later one (GT).
  if count == 0 then
    redis.call('PEXPIREAT', KEYS[6], expiresAt)
  else
    redis.call('PEXPIREAT', KEYS[6], expiresAt, 'GT')
  end
  count = count + 1
end
redis.call('HSET', KEYS[1], unpack(ARGV, 8))
redis.call('PEXPIREAT', KEYS[1], expiresAt)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], 0, ARGV[5])
redis.call('ZADD', KEYS[4], expiresAt, ARGV[7])
if ARGV[6] == '1' then
  -- The index lives as long as its longest-lived task; the janitor removes members as their tasks expire.
  redis.call('ZADD', KEYS[5], 0, ARGV[5])
  -- GT moves an expiry only later, and leaves a key without one as it is: NX gives that one its first (one command
  -- in the usual case, tasks of one owner created in order of expiry).
  if redis.call('PEXPIREAT', KEYS[5], expiresAt, 'GT') == 0 then
    redis.call('PEXPIREAT', KEYS[5], expiresAt, 'NX')
  end
end
return {1, count}
