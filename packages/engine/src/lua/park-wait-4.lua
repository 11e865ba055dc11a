--[[
  Parks a running tool on a wait (docs/durable-execution.md, "Waits"): a sleep until a time, a wait for an event, or
  a wait for its client's answer. The wait is kept in the task's durable hash under its key, so that the attempt
  that runs after the wake finds it: a wait that has its outcome already (an event delivered, a timeout) is answered
  with it, and nothing is parked. An event wait first takes the oldest event of its name kept for the task (sent
  before the wait), once. Otherwise the record says what the task waits for and until when (`wait`), the task joins
  the waiting set of the wait's kind (what operators count), and the caller moves the job to BullMQ's delayed set
  until then. Fenced as the other durable writes are (include/durable-fence.lua): an attempt a later one has
  replaced, or a task that has ended, cannot park.

  KEYS[1] the task record hash
  KEYS[2] the task's durable hash (waits under `w:<key>`)
  KEYS[3] the list of events kept for the task (signal-task-4.lua)
  KEYS[4] the sorted set of parked tasks waiting for this kind of wait, scored by until when

  ARGV[1] the arguments, JSON:
    taskId       the task id
    attempt      the attempt parking (BullMQ's count of the job's starts)
    field        the wait's field in the durable hash (`w:<key>`)
    kind         `sleep`, `event` or `input`
    until        epoch ms: when a new wait ends (a wait stored already keeps its own)
    pending      the JSON stored for a new wait: {kind, until, name?, requestId?}
    wait         the JSON of the record's `wait` field for a new wait: {kind, until, key, name?}
    prefix       for an event wait: how the JSON of a kept event of that name starts (`{"name":"<name>",`)
    now          epoch ms
    maxEntries   the most entries the durable hash may hold (DURABLE_MAX_STEPS; counted as save-durable-3.lua does)
    maxWaits     the most waits the task may make in its life (DURABLE_MAX_WAITS)

  Returns {"resolved", value} when the wait has its outcome (value: the JSON stored, `{"outcome":...}`); {"parked",
  until} when the task is parked until `until`; {"missing"}, {"ended", status}, {"stale", latestAttempt} as
  save-durable-3.lua; {"full", count} when the durable hash is full; {"too-many", count} when the task made
  maxWaits waits already.
]]
--- @include "replies"
--- @include "durable-fence"
local args = cjson.decode(ARGV[1])
local refusal, f = durableFence(1, args.attempt, 'createdAt', 'ttl', 'waits')
if refusal then
  return refusal
end
local expiresAt = tonumber(f[3]) + tonumber(f[4])

local function resolve(outcome)
  local value = '{"outcome":' .. outcome .. '}'
  redis.call('HSET', KEYS[2], args.field, value)
  redis.call('PEXPIREAT', KEYS[2], expiresAt)
  redis.call('HSET', KEYS[1], 'durable', '1')
  return {Reply.RESOLVED, value}
end

local untilMs = args['until']
local stored = redis.call('HGET', KEYS[2], args.field)
if stored then
  if string.sub(stored, 1, 11) == '{"outcome":' then
    return {Reply.RESOLVED, stored}
  end
  untilMs = tonumber(cjson.decode(stored)['until'])
else
  local full = durableFull(2, args.maxEntries)
  if full then
    return full
  end
  local waits = tonumber(f[5]) or 0
  if waits >= args.maxWaits then
    return {Reply.TOO_MANY, tostring(waits)}
  end
end

if args.kind == 'event' then
  -- The oldest event of that name sent before the wait: taken once.
  local prefix = args.prefix
  for _, entry in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
    if string.sub(entry, 1, #prefix) == prefix then
      redis.call('LREM', KEYS[3], 1, entry)
      if not stored then
        redis.call('HINCRBY', KEYS[1], 'waits', 1)
      end
      return resolve(entry)
    end
  end
end
if untilMs <= args.now then
  -- The time has come: a sleep is over (kept as such, so that later attempts do not look again), an event wait
  -- timed out. A client's answer is the caller's to take (take-input-4.lua).
  if args.kind == 'sleep' then
    return resolve('{"slept":true}')
  end
  if args.kind == 'event' then
    return resolve('{"timedOut":true}')
  end
end

if not stored then
  redis.call('HINCRBY', KEYS[1], 'waits', 1)
  redis.call('HSET', KEYS[2], args.field, args.pending)
  redis.call('PEXPIREAT', KEYS[2], expiresAt)
  redis.call('HSET', KEYS[1], 'durable', '1', 'wait', args.wait)
else
  local wait = cjson.decode(args.wait)
  wait['until'] = untilMs
  redis.call('HSET', KEYS[1], 'durable', '1', 'wait', cjson.encode(wait))
end
redis.call('ZADD', KEYS[4], untilMs, args.taskId)
return {Reply.PARKED, tostring(untilMs)}
