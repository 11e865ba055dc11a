--[[
  Settles one attempt of a task's webhook delivery (docs/webhooks.md), for the delivery loop that claimed the task
  (claim-due-1.lua): only while its claim holds (the task's score is still the claim's `leaseEnd`; a later claim has a
  later one), and only for the delivery it attempted (the outbox's head is still `head`), so that a worker whose lease
  ran out can no longer move the outbox on, and each task's deliveries go out one at a time, in order.

  KEYS[1] the set of tasks with deliveries due, scored by when (or by a claim's lease end)
  KEYS[2] the task's webhook outbox (list of JSON deliveries, oldest first)
  KEYS[3] the task's attempt log (list of JSON attempts, oldest first)
  KEYS[4] the counters of attempts by outcome, and of tasks gone with deliveries left ("expired") (hash)

  ARGV[1] the arguments, JSON:
    taskId    the task id (its member of KEYS[1])
    leaseEnd  the end of the caller's claim, as claim-due-1.lua scored it
    outcome   "delivered" (the receiver took it: the next delivery is due now), "retry" (failed: the head becomes
              `next` and is due at `nextAt`), "abandoned" (failed for good: dropped, the next one is due now), "empty"
              (the outbox was found empty) or "expired" (the task is gone: its outbox is dropped, the task counted)
    head      the outbox's head as the caller read it (delivered, retry, abandoned)
    next      retry: the head with its attempt count and first attempt
    nextAt    retry: epoch ms
    now       epoch ms
    attempt   the attempt as the log keeps it (JSON; delivered, retry, abandoned)
    logMax    the most attempts the log keeps
    expiresAt the task's expiry, epoch ms: the log's

  Returns {"ok"}, or {"lost"} when the claim no longer holds or the head is not `head` (nothing changed).
]]
--- @include "replies"
local args = cjson.decode(ARGV[1])
local taskId = args.taskId
local score = redis.call('ZSCORE', KEYS[1], taskId)
if not score or tonumber(score) ~= args.leaseEnd then
  return {Reply.LOST}
end

-- The task's next delivery is due now when there is one; otherwise it leaves the set until a change queues one.
local function nextOrDone()
  if redis.call('LLEN', KEYS[2]) > 0 then
    redis.call('ZADD', KEYS[1], args.now, taskId)
  else
    redis.call('ZREM', KEYS[1], taskId)
  end
end

if args.outcome == 'empty' then
  nextOrDone()
  return {Reply.OK}
end
if args.outcome == 'expired' then
  -- Counted per task: its outbox may have expired with it already.
  redis.call('HINCRBY', KEYS[4], 'expired', 1)
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[1], taskId)
  return {Reply.OK}
end

if redis.call('LINDEX', KEYS[2], 0) ~= args.head then
  return {Reply.LOST}
end
redis.call('RPUSH', KEYS[3], args.attempt)
redis.call('LTRIM', KEYS[3], -args.logMax, -1)
redis.call('PEXPIREAT', KEYS[3], args.expiresAt)
if args.outcome == 'retry' then
  redis.call('HINCRBY', KEYS[4], 'failed', 1)
  redis.call('LSET', KEYS[2], 0, args.next)
  redis.call('ZADD', KEYS[1], args.nextAt, taskId)
  return {Reply.OK}
end
redis.call('HINCRBY', KEYS[4], args.outcome, 1)
redis.call('LPOP', KEYS[2])
nextOrDone()
return {Reply.OK}
