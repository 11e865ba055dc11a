--[[
  Stores what a running tool keeps durably (docs/durable-execution.md) in the task's own hash beside the record: its
  checkpoint (replaced each time) or a step's result (stored once: a step stored already keeps its first result,
  which is answered), with its facts (`f:<field>`: when it started, how long it ran, the attempt, its size, and its
  order among the task's steps and child calls, the hash's size then), which operators read without the results. The
  write is fenced as the attempt's moves are (include/durable-fence.lua): once a later attempt of the task's job has
  started, an earlier one can no longer write; nor can anyone once the task has ended. The record says, in the same
  step, that the task keeps durable state (`durable`), so that a later attempt reads the hash only when there is
  something in it; a checkpoint also sets its time and size there, for operators, and counts as a sign
  of life: the task's entry in the live set moves to now, so that the reconciler, which looks at live tasks left
  unchanged for RECONCILE_AFTER_MS, leaves a task that checkpoints alone. The hash expires with the record. The record
  keeps the bytes its checkpoint and step results take, field names included (`durableBytes`): a write that would take
  it past maxTotalBytes is refused, so a task's durable state is bounded in bytes, not only in entries.

  KEYS[1] the task record hash
  KEYS[2] the task's durable hash (field `checkpoint`, step results `s:<name>`, child task ids `c:<key>`, and the
          facts of each step and child call, `f:s:<name>` and `f:c:<key>`)
  KEYS[3] the sorted set of live (non-terminal) tasks, scored by lastUpdatedAt (or the last sign of life)

  ARGV[1] the arguments, JSON:
    taskId      the task id
    attempt     the attempt writing (BullMQ's count of the job's starts)
    field       `checkpoint`, or the step's field (`s:<name>`)
    value       the JSON text to store
    bytes       its size in bytes (for operators)
    now         epoch ms
    checkpoint  true for a checkpoint (replaces the last one), false for a step (stored once)
    maxEntries  the most steps and child tasks the task may keep together (two fields each: the value and its
                facts), besides its checkpoint
    maxTotalBytes  the most bytes the checkpoint and step results may take together
    facts       a step's facts, a JSON object (the script adds its order, `n`)

  Returns {"ok"} when stored; {"exists", value} when the step was stored already (its first result); {"missing"}
  when the record does not exist; {"ended", status} when the task has ended; {"stale", latestAttempt} when a later
  attempt has started; {"full", count} when the task keeps maxEntries steps and child tasks already; {"over", bytes}
  when the write would take the checkpoint and step results to `bytes`, past maxTotalBytes.
]]
--- @include "replies"
--- @include "durable-fence"
local args = cjson.decode(ARGV[1])
local refusal, f = durableFence(1, args.attempt, 'createdAt', 'ttl', 'durableBytes')
if refusal then
  return refusal
end
local count = 0
if not args.checkpoint then
  local stored = redis.call('HGET', KEYS[2], args.field)
  if stored then
    return {Reply.EXISTS, stored}
  end
  local full
  full, count = durableFull(2, args.maxEntries)
  if full then
    return full
  end
end
-- A checkpoint replaces the last one: its bytes are given back (a step is stored once, so it replaces nothing). The
-- facts are not counted: they are small and bounded by maxEntries.
local replaced = 0
if args.checkpoint then
  local last = redis.call('HSTRLEN', KEYS[2], args.field)
  if last > 0 then
    replaced = string.len(args.field) + last
  end
end
local total = (tonumber(f[5]) or 0) - replaced + string.len(args.field) + string.len(args.value)
if total > args.maxTotalBytes then
  return {Reply.OVER, tostring(total)}
end
if args.facts then
  redis.call('HSET', KEYS[2], args.field, args.value, 'f:' .. args.field,
    '{"n":' .. count .. ',' .. string.sub(args.facts, 2))
else
  redis.call('HSET', KEYS[2], args.field, args.value)
end
redis.call('PEXPIREAT', KEYS[2], tonumber(f[3]) + tonumber(f[4]))
if args.checkpoint then
  redis.call('HSET', KEYS[1], 'durable', '1', 'checkpointAt', args.now, 'checkpointBytes', args.bytes, 'durableBytes',
    total)
  redis.call('ZADD', KEYS[3], 'XX', args.now, args.taskId)
else
  redis.call('HSET', KEYS[1], 'durable', '1', 'durableBytes', total)
end
return {Reply.OK}
