--[[
  Counts the failed tries of a step that has a retry policy of its own (docs/durable-execution.md, "Steps"), in the
  task's durable hash, so that an attempt cut off between two tries (a crash) is followed by one that goes on
  counting; a count of 0 forgets it (the step gave up: a later run of the tool starts a new round). Fenced as the
  other durable writes are (include/durable-fence.lua).

  KEYS[1] the task record hash
  KEYS[2] the task's durable hash (counts under `w:tries:<step>`)

  ARGV[1] the arguments, JSON:
    attempt     the attempt writing
    field       the count's field (`w:tries:<step>`)
    tries       the failed tries so far (0: forget the count)
    maxEntries  the most entries the durable hash may hold (DURABLE_MAX_STEPS; counted as save-durable-3.lua does)

  Returns {"ok"}; {"missing"}, {"ended", status}, {"stale", latestAttempt}, {"full", count} as save-durable-3.lua.
]]
--- @include "replies"
--- @include "durable-fence"
local args = cjson.decode(ARGV[1])
local refusal, f = durableFence(1, args.attempt, 'createdAt', 'ttl')
if refusal then
  return refusal
end
if args.tries == 0 then
  redis.call('HDEL', KEYS[2], args.field)
  return {Reply.OK}
end
if redis.call('HEXISTS', KEYS[2], args.field) == 0 then
  local full = durableFull(2, args.maxEntries)
  if full then
    return full
  end
end
redis.call('HSET', KEYS[2], args.field, args.tries)
redis.call('PEXPIREAT', KEYS[2], tonumber(f[3]) + tonumber(f[4]))
redis.call('HSET', KEYS[1], 'durable', '1')
return {Reply.OK}
