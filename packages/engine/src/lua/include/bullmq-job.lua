--[[
  Included (`--- @include "bullmq-job"`) by create-task-6.lua: a job of one of our tool queues written as BullMQ's
  `queue.add` writes a prioritized job, so that the task and its job are one step. This is the one Lua that knows
  BullMQ's layout (with release-lost-3.lua, which releases a gone worker's jobs): it follows addPrioritizedJob-9.lua
  and its includes (storeJob, getOrSetMaxEvents, isQueuePausedOrMaxed, addJobWithPriority) at the version of
  packages/engine/src/bullmq/job-layout.ts BULLMQ_JOB_LAYOUT_VERSION; test/integration/job-layout.test.ts compares
  the two key by key, and docs/bullmq-upgrade.md says what to compare on an upgrade. BullMQ's id counter and
  duplicate check are left out: the job id is the task id, a fresh UUID.

  bullmqQueueState(keys) reads what the add needs of the queue, before the caller writes anything (a script that
  fails does not undo its writes, so nothing it reads may fail after them): the queue's meta is read once (BullMQ
  reads it with two commands, getOrSetMaxEvents and isQueuePausedOrMaxed). It answers the queue's opts.maxLenEvents
  (false when unset) and whether the queue is paused or at its global concurrency. `keys`: the KEYS indexes of the
  queue's meta hash (`keys.meta`) and active list (`keys.active`).

  bullmqAddPrioritizedJob(keys, prioritized, jobId, name, data, opts, timestamp, priority, maxEvents, pausedOrMaxed)
  adds the job: the job hash (name, data, the stored options `opts` with `priority` appended, timestamp, delay 0,
  priority), the "added" event, the prioritized entry KEYS[prioritized] (score = priority * 2^32 + the priority
  counter), the marker unless the queue is paused or at its concurrency, and the "waiting" event trimmed to the
  queue's maxEvents (set to BullMQ's default, 10000, when the queue has none yet). `keys`: the KEYS indexes of the
  job hash (`keys.job`), the marker, the meta, the events stream and the priority counter (`keys.priorityCounter`).
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

local function bullmqAddPrioritizedJob(keys, prioritized, jobId, name, data, opts, timestamp, priority, maxEvents,
    pausedOrMaxed)
  if not maxEvents then
    maxEvents = 10000
    redis.call('HSET', KEYS[keys.meta], 'opts.maxLenEvents', maxEvents)
  end
  -- The options as BullMQ stores them (cjson.encode of the packed options): an object, here with the priority.
  local stored = string.sub(opts, 1, -2) .. ',"priority":' .. priority .. '}'
  redis.call('HSET', KEYS[keys.job], 'name', name, 'data', data, 'opts', stored, 'timestamp', timestamp, 'delay', 0,
    'priority', priority)
  redis.call('XADD', KEYS[keys.events], '*', 'event', 'added', 'jobId', jobId, 'name', name)
  local score = priority * 0x100000000 + redis.call('INCR', KEYS[keys.priorityCounter]) % 0x100000000
  redis.call('ZADD', KEYS[prioritized], score, jobId)
  if not pausedOrMaxed then
    redis.call('ZADD', KEYS[keys.marker], 0, '0')
  end
  redis.call('XADD', KEYS[keys.events], 'MAXLEN', '~', maxEvents, '*', 'event', 'waiting', 'jobId', jobId)
end
