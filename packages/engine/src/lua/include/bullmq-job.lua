--[[
  Included (`--- @include "bullmq-job"`) by create-task-6.lua: a task's job written as BullMQ's `queue.add` writes
  it, so that the task and its job are one step. This is the one Lua that knows BullMQ's layout (with
  release-lost-3.lua, which releases a gone worker's jobs): it follows addPrioritizedJob-9.lua and addStandardJob-9.lua
  and their includes (storeJob, getOrSetMaxEvents, isQueuePausedOrMaxed, addJobWithPriority, addJobInTargetList,
  addBaseMarkerIfNeeded) at the version of packages/engine/src/bullmq/job-layout.ts BULLMQ_JOB_LAYOUT_VERSION;
  test/integration/job-layout.test.ts compares each with BullMQ's key by key, and docs/bullmq-upgrade.md says what to
  compare on an upgrade. BullMQ's id counter and duplicate check are left out: the job id is the task id, a fresh
  UUID.

  bullmqQueueState(keys) reads what the add needs of the queue, before the caller writes anything (a script that
  fails does not undo its writes, so nothing it reads may fail after them): the queue's meta is read once (BullMQ
  reads it with two commands, getOrSetMaxEvents and isQueuePausedOrMaxed). It answers the queue's opts.maxLenEvents
  (false when unset) and whether the queue is paused or at its global concurrency. `keys`: the KEYS indexes of the
  queue's meta hash (`keys.meta`) and active list (`keys.active`).

  bullmqAddPrioritizedJob(keys, prioritized, jobId, name, data, opts, timestamp, priority, maxEvents, pausedOrMaxed)
  adds a prioritized job (one of our tool queues in a fair order): the job hash (name, data, the stored options
  `opts` with `priority` appended, timestamp, delay 0, priority), the "added" event, the prioritized entry
  KEYS[prioritized] (score = priority * 2^32 + the priority counter), the marker unless the queue is paused or at its
  concurrency, and the "waiting" event trimmed to the queue's maxEvents (set to BullMQ's default, 10000, when the
  queue has none yet). `keys`: the KEYS indexes of the job hash (`keys.job`), the marker, the meta, the events stream
  and the priority counter (`keys.priorityCounter`).

  bullmqAddStandardJob(keys, jobId, name, data, opts, timestamp, maxEvents, pausedOrMaxed) adds a job without a
  priority (an external consumer's queue, docs/job-contract.md, or a tool queue without a fair order): the same job
  hash with the stored options `opts` as they are and priority 0, the "added" event, the job id pushed (LPUSH, FIFO)
  onto the wait list `keys.wait` (whether or not the queue is paused: BullMQ keeps a paused queue's jobs in wait
  since it stopped renaming wait to paused), the marker unless the queue is paused or at its concurrency, and the
  "waiting" event trimmed as above. `keys`: as above, with the wait list instead of the priority counter.

  Both share bullmqStoreJob(keys, jobId, name, data, opts, timestamp, priority, maxEvents), the job hash and its
  "added" event after the meta's maxEvents is set when missing (answers the maxEvents to trim to), and
  bullmqJobWaiting(keys, jobId, maxEvents, pausedOrMaxed), the marker and the "waiting" event.
]]
local function bullmqQueueState(keys)
  local queue = redis.call('HMGET', KEYS[keys.meta], 'opts.maxLenEvents', 'paused', 'concurrency')
  local pausedOrMaxed = queue[2] ~= false
  local concurrency = tonumber(queue[3] or '')
  if not pausedOrMaxed and concurrency then
    pausedOrMaxed = redis.call('LLEN', KEYS[keys.active]) >= concurrency
  end
  return queue[1], pausedOrMaxed
end

-- BullMQ's storeJob, after its getOrSetMaxEvents.
local function bullmqStoreJob(keys, jobId, name, data, opts, timestamp, priority, maxEvents)
  if not maxEvents then
    maxEvents = 10000
    redis.call('HSET', KEYS[keys.meta], 'opts.maxLenEvents', maxEvents)
  end
  redis.call('HSET', KEYS[keys.job], 'name', name, 'data', data, 'opts', opts, 'timestamp', timestamp, 'delay', 0,
    'priority', priority)
  redis.call('XADD', KEYS[keys.events], '*', 'event', 'added', 'jobId', jobId, 'name', name)
  return maxEvents
end

-- BullMQ's addBaseMarkerIfNeeded and the "waiting" event of its adds.
local function bullmqJobWaiting(keys, jobId, maxEvents, pausedOrMaxed)
  if not pausedOrMaxed then
    redis.call('ZADD', KEYS[keys.marker], 0, '0')
  end
  redis.call('XADD', KEYS[keys.events], 'MAXLEN', '~', maxEvents, '*', 'event', 'waiting', 'jobId', jobId)
end

local function bullmqAddPrioritizedJob(keys, prioritized, jobId, name, data, opts, timestamp, priority, maxEvents,
    pausedOrMaxed)
  -- The options as BullMQ stores them (cjson.encode of the packed options): an object, here with the priority.
  local stored = string.sub(opts, 1, -2) .. ',"priority":' .. priority .. '}'
  maxEvents = bullmqStoreJob(keys, jobId, name, data, stored, timestamp, priority, maxEvents)
  local score = priority * 0x100000000 + redis.call('INCR', KEYS[keys.priorityCounter]) % 0x100000000
  redis.call('ZADD', KEYS[prioritized], score, jobId)
  bullmqJobWaiting(keys, jobId, maxEvents, pausedOrMaxed)
end

local function bullmqAddStandardJob(keys, jobId, name, data, opts, timestamp, maxEvents, pausedOrMaxed)
  maxEvents = bullmqStoreJob(keys, jobId, name, data, opts, timestamp, 0, maxEvents)
  redis.call('LPUSH', KEYS[keys.wait], jobId)
  bullmqJobWaiting(keys, jobId, maxEvents, pausedOrMaxed)
end
