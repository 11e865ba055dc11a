--[[
  Creates a task record with its index entries in one step, after admitting it under the owner's cap on unfinished
  tasks (T-RSRC-1) when there is one. A refused task leaves no trace; an admitted one is written whole, so a
  reader never sees half a task (invariant 2). With the tool's fair order (docs/scheduling.md, "Fairness"), the same
  step gives the task's job its priority and, for a job of one of our tool queues, adds the job itself: creating a
  task is one round trip, and there is no record without its job nor a job without its record.

  The job is written as BullMQ's `queue.add` writes a prioritized job (addPrioritizedJob-9.lua and its includes,
  storeJob, getOrSetMaxEvents, isQueuePausedOrMaxed, addJobWithPriority, at the version of
  queue.ts BULLMQ_JOB_LAYOUT_VERSION; test/integration/job-layout.test.ts compares the two): the job hash, the
  "added" event, the prioritized entry (score = priority * 2^32 + the priority counter), the marker unless the queue
  is paused or at its concurrency, and the "waiting" event trimmed to the queue's opts.maxLenEvents. BullMQ's id
  counter and duplicate check are left out: the job id is the task id, a fresh UUID. The queue's meta is read once.

  The cap's set holds the owner's unfinished tasks scored by their expiry; the transition script removes a task
  when it becomes terminal, and entries past their expiry are dropped here once the set is full, so a task that
  left without a terminal transition (expired, purged) frees its slot by its ttl at the latest. The set never
  holds more than the cap.

  KEYS[1] the task hash
  KEYS[2] sorted set of live (non-terminal) tasks, scored by lastUpdatedAt
  KEYS[3] sorted set of every task, by index member
  KEYS[4] sorted set of expiries
  KEYS[5] the owner's task index (tasks/list); used when ARGV[6] is '1'
  KEYS[6] the owner's unfinished tasks, scored by expiry; used when ARGV[4] is not ''
  KEYS[7...] first, when ARGV[8] is not '' (a job in the tool's fair order): the tool's fair-order hash (principal
          -> priority of its last job queued for the tool; "\0v" -> the virtual time; "\0x" -> the expiry this
          script last gave the hash, epoch ms), then the tool queue's waiting
          prioritized jobs (BullMQ's sorted set, score = priority * 2^32 + counter); then, when ARGV[24] is "1"
          (a job is added; only with a fair order): the job hash, the queue's marker, meta, active list, events
          stream and priority counter (BullMQ's keys); then, when ARGV[11] is "1": the request's session hash, its
          four rate buckets and the security counters (KEYS[1 .. 6] of touch-session-6.lua)

  ARGV[1] task id
  ARGV[2] its expiry, epoch ms
  ARGV[3] now, epoch ms (its lastUpdatedAt)
  ARGV[4] the most unfinished tasks the owner may have, or '' for no cap
  ARGV[5] its index member
  ARGV[6] '1' when the task is listed in the owner's index (a task, not a plain call)
  ARGV[7] its expiries entry
  ARGV[8] the principal whose job gets a fair priority ('' for none)
  ARGV[9] its step (a whole number >= 1; '' for none)
  ARGV[10] the largest priority BullMQ accepts ('' for none)
  ARGV[11] "1" when this step also opens the request (of a session this replica knows), as touch-session-6.lua
           does (include/open-request.lua): the request costs one round trip, and one that its session's end or a
           rate limit refuses creates nothing
  ARGV[12 .. 23] when ARGV[11] is "1": ARGV[1 .. 12] of touch-session-6.lua ('' each otherwise)
  ARGV[24] "1" when this step adds the task's job (ARGV[1] is its id), "0" otherwise
  ARGV[25] the job's name
  ARGV[26] JSON of its data
  ARGV[27] JSON of its stored options without the priority (this script appends it)
  ARGV[28] its timestamp, epoch ms
  ARGV[29...] the hash's field/value pairs

  Returns {1, count, priority} when created (count: the owner's unfinished tasks, 0 without a cap; priority: the
  job's, 0 without a fair order), {0, count} when the owner is at the limit, {-1, opened} when the request was
  refused as it was opened (opened: -1 its session is gone, 1..4 the rate bucket that refused it).
]]
--- @include "open-request"
local fair = ARGV[8] ~= ''
local job = ARGV[24] == '1'
local FIELDS = 29
if ARGV[11] == '1' then
  local opened = openKnownSession(6 + (fair and 2 or 0) + (job and 6 or 0) + 1, 12)
  if opened ~= 0 then
    return {-1, opened}
  end
end
local expiresAt = ARGV[2]
-- What the job's part reads comes first: a script that fails does not undo its writes, so nothing it reads may fail
-- after the record is written. BullMQ reads these with two commands (getOrSetMaxEvents, isQueuePausedOrMaxed).
local queue, pausedOrMaxed
if job then
  queue = redis.call('HMGET', KEYS[6 + 5], 'opts.maxLenEvents', 'paused', 'concurrency')
  pausedOrMaxed = queue[2] ~= false
  local concurrency = tonumber(queue[3] or '')
  if not pausedOrMaxed and concurrency then
    pausedOrMaxed = redis.call('LLEN', KEYS[6 + 6]) >= concurrency
  end
end
local count = 0
if ARGV[4] ~= '' then
  local cap = tonumber(ARGV[4])
  count = redis.call('ZCARD', KEYS[6])
  -- Entries past their expiry only matter when they could fill the cap: dropped then, not on every create.
  if count >= cap then
    count = count - redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', ARGV[3])
    if count >= cap then
      return {0, count}
    end
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
redis.call('HSET', KEYS[1], unpack(ARGV, FIELDS))
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

local priority = 0
if fair then
  -- Start-time fair queueing: the job's priority is max(last[principal], V) + step, V the tool's virtual time.
  local VTIME = '\0v'
  local EXPIRY = '\0x'
  -- The hash's expiry is set this much past the task's, so that the next creates, whose tasks expire a little
  -- later, find it long enough already (read with the state below) and move it only about once per this period.
  local EXPIRY_AHEAD_MS = 60000
  local maxPriority = tonumber(ARGV[10])
  local head = redis.call('ZRANGE', KEYS[6 + 2], 0, 0, 'WITHSCORES')
  local state = redis.call('HMGET', KEYS[6 + 1], VTIME, ARGV[8], EXPIRY)
  -- Every write below sets the virtual time: without it the hash does not exist (and has no expiry yet).
  local fresh = not state[1]
  local vtime = tonumber(state[1] or '0')
  local base = tonumber(state[2] or '0')
  if #head == 0 then
    if vtime > maxPriority / 2 then
      redis.call('DEL', KEYS[6 + 1])
      fresh = true
      vtime = 0
      base = 0
    end
  else
    -- Jobs below the head's priority have started: a principal's earlier jobs that did count for nothing now.
    local started = math.floor(tonumber(head[2]) / 4294967296) - 1
    if started > vtime then
      vtime = started
    end
  end
  if vtime > base then
    base = vtime
  end
  priority = base + tonumber(ARGV[9])
  -- A queue that has not drained for about a million rounds falls back to arrival order for the excess.
  if priority > maxPriority then
    priority = maxPriority
  end
  -- The hash lives at least as long as the longest-lived task queued for the tool. Its expiry moves only when this
  -- task would outlive the one recorded (a hash written without the record, by an older runner, counts as 0).
  local expiry = fresh and 0 or tonumber(state[3] or '0')
  if tonumber(expiresAt) > expiry then
    expiry = tonumber(expiresAt) + EXPIRY_AHEAD_MS
    redis.call('HSET', KEYS[6 + 1], ARGV[8], priority, VTIME, vtime, EXPIRY, expiry)
    if fresh then
      redis.call('PEXPIREAT', KEYS[6 + 1], expiry)
    else
      -- GT: another runner may have set a later expiry without recording it here.
      redis.call('PEXPIREAT', KEYS[6 + 1], expiry, 'GT')
    end
  else
    redis.call('HSET', KEYS[6 + 1], ARGV[8], priority, VTIME, vtime)
  end
end

if job then
  -- KEYS[6 + 3 .. 6 + 8]: the job hash, the queue's marker, meta, active list, events stream, priority counter.
  local jobId, name = ARGV[1], ARGV[25]
  local maxEvents = queue[1]
  if not maxEvents then
    maxEvents = 10000
    redis.call('HSET', KEYS[6 + 5], 'opts.maxLenEvents', maxEvents)
  end
  -- The options as BullMQ stores them (cjson.encode of the packed options): an object, here with the priority.
  local opts = string.sub(ARGV[27], 1, -2) .. ',"priority":' .. priority .. '}'
  redis.call('HSET', KEYS[6 + 3], 'name', name, 'data', ARGV[26], 'opts', opts, 'timestamp', ARGV[28], 'delay', 0,
    'priority', priority)
  redis.call('XADD', KEYS[6 + 7], '*', 'event', 'added', 'jobId', jobId, 'name', name)
  local score = priority * 0x100000000 + redis.call('INCR', KEYS[6 + 8]) % 0x100000000
  redis.call('ZADD', KEYS[6 + 2], score, jobId)
  if not pausedOrMaxed then
    redis.call('ZADD', KEYS[6 + 4], 0, '0')
  end
  redis.call('XADD', KEYS[6 + 7], 'MAXLEN', '~', maxEvents, '*', 'event', 'waiting', 'jobId', jobId)
end
return {1, count, priority}
