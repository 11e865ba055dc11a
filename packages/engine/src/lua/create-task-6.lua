--[[
  Creates a task record with its index entries in one step, after admitting it under the owner's cap on unfinished
  tasks (T-RSRC-1) when there is one. A refused task leaves no trace; an admitted one is written whole, so a
  reader never sees half a task (invariant 2). The same step adds the task's job: creating a task is one round trip,
  and there is no record without its job nor a job without its record (the reconciler never sees a live task whose
  job is not there yet). With the tool's fair order (docs/scheduling.md, "Fairness"), the job of one of our tool
  queues is given its priority; the job of an external consumer's queue (docs/job-contract.md, `ext-<tool>`), or of
  a tool queue without a fair order, goes onto the queue's wait list without one. With the opening of
  the request (of a session the api replica knows), the step opens it first as touch-session-6.lua does
  (include/open-request.lua): the request costs one round trip, and one that its session's end or a rate limit
  refuses creates nothing. With the context of a 2026-07-28 request (sessions.ts), the same step stores it beside the
  record, expiring with it: a call refused here (or before) leaves no context behind. With `filed` (a plain call of a
  2025-11-25 session), the same step files the call under its request id in the session's calls hash, which
  notifications/cancelled reads: the entry exists exactly when its call was created, with no command of its own.

  The job is written as BullMQ's `queue.add` writes a prioritized or a standard job (include/bullmq-job.lua, which
  follows BullMQ's addPrioritizedJob and addStandardJob at the version of bullmq/job-layout.ts
  BULLMQ_JOB_LAYOUT_VERSION; test/integration/job-layout.test.ts compares them): the job hash, its events, the
  prioritized entry or the wait list's, and the marker. The fair order reads BullMQ's prioritized score too
  (priority * 2^32 + the priority counter).

  With an idempotency key (a tools/call that carries one, docs/durable-execution.md), the same step first looks the
  key up among the principal's: a live task filed under it is answered instead ({"same-call", its id}, or
  {"other-call", its id} when it was filed for another call), and nothing is written; a new task is filed under the
  key. With a parent (a child task started by a running tool's ctx.callTool), the same step checks the parent
  (include/child-call.lua): a child the call's key names already is answered ({"same-call", its id}, or
  {"other-call", its id} when it was filed for another call); a new one
  is filed in the parent's durable hash and its set of children, so that the child exists exactly when the parent
  knows it. With `resume` (an operator's `mcpt retry --resume`), the task begins with what a failed task kept: its
  durable hash is copied (its checkpoint, its steps, the child calls that ended with a result) in the step that
  creates the task, so that no attempt of it can start before, and the two records name each other; a task is
  resumed once.

  The cap's set holds the owner's unfinished tasks scored by their expiry; the transition script removes a task
  when it becomes terminal, and entries past their expiry are dropped here once the set is full, so a task that
  left without a terminal transition (expired, purged) frees its slot by its ttl at the latest. The set never
  holds more than the cap.

  KEYS[1] the task hash
  KEYS[2] sorted set of live (non-terminal) tasks, scored by lastUpdatedAt
  KEYS[3] sorted set of every task, by index member
  KEYS[4] sorted set of expiries
  KEYS[5] the owner's task index (tasks/list); used when `listed`
  KEYS[6] the owner's unfinished tasks, scored by expiry; used with `maxLive`
  KEYS[7...] the keys of `fair`, `job`, `open`, `context`, `idempotency`, `parent`, `resume` and `filed`, each at the
          index its table names

  ARGV[1] the arguments, JSON:
    taskId       the task id (also its job's id)
    expiresAt    its expiry, epoch ms
    now          epoch ms (its lastUpdatedAt)
    maxLive      absent (no cap), or the most unfinished tasks the owner may have
    member       its index member
    listed       true when the task is listed in the owner's index (a task, not a plain call)
    expiryEntry  its expiries entry
    fields       the hash's field/value pairs, flat
    fair         absent, or the tool's fair order for the task's job:
                   keys         {fairQueue = the KEYS index of the tool's fair-order hash (principal -> priority of
                                its last job queued for the tool; "\0v" -> the virtual time; "\0x" -> the expiry this
                                script last gave the hash, epoch ms), prioritized = that of the tool queue's waiting
                                prioritized jobs (BullMQ's sorted set, score = priority * 2^32 + counter)}
                   principal    the principal whose job it is
                   step         its priority step (a whole number >= 1)
                   maxPriority  the largest priority BullMQ accepts
    job          absent, or the task's job, added in this step:
                   kind         "prioritized" (only with `fair`, which gives its priority) or "standard" (the wait
                                list, no priority)
                   keys         the KEYS indexes of BullMQ's keys: {job = the job hash, marker, meta, active, events
                                = the events stream, and priorityCounter for a prioritized job, wait = the wait list
                                for a standard one}
                   name         the job's name
                   data         JSON of its data
                   opts         JSON of its stored options (a prioritized job's without the priority: this script
                                appends it)
                   timestamp    epoch ms
    open         absent, or the opening of the request (include/open-request.lua)
    context      absent, or the request context to store with an admitted task (a 2026-07-28 request's):
                   key     the KEYS index of its hash
                   fields  the hash's field/value pairs, flat
    idempotency  absent, or the call's idempotency key (include/idempotency.lua):
                   keys         {entries = the KEYS index of the principal's hash of keys, order = that of its sorted
                                set of them}
                   key          the key
                   digest       the digest of the call (tool and arguments)
                   maxKeys      the most keys kept per principal
                   replace      absent, or the id of the task filed under the key that the caller found gone
    parent       absent, or the task whose running tool starts this one (include/child-call.lua):
                   keys         {record = the KEYS index of the parent's record, durable = that of its durable hash,
                                children = that of its set of children}
                   field        the call's field in the parent's durable hash (`c:<key>`)
                   attempt      the parent's attempt starting the child (its moves' fence)
                   maxEntries   the most steps and child tasks the parent may keep
                   maxChildren  the most children it may start when its record carries no cap (`maxChildren`)
                   digest       the digest of the call (its tool and the arguments the tool passed)
                   facts        the call's facts, a JSON object (tool, digest, when, attempt)
    resume       absent, or the failed task this one continues:
                   keys         {record = the KEYS index of its record, durable = that of its durable hash, copy = that
                                of this task's durable hash}
                   taskId       its id
                   drop         the ids of its child tasks whose calls are not carried over (they ended without a
                                result): their fields are left out
    filed        absent, or a plain call's entry by request id (sessions/session-calls.ts):
                   key          the KEYS index of the session's calls hash (request id -> task id), which lives as long
                                as its longest-lived call may
                   field        the request id, as JSON

  Returns {"created", count, priority} when created (count: the owner's unfinished tasks, 0 without a cap;
  priority: the job's, 0 without a fair order), {"owner-limit", count} when the owner is at the limit,
  {"not-opened", opened} when the request was refused as it was opened (opened: -1 its session is gone, 1..4 the
  rate bucket that refused it), {"same-call", taskId} when the idempotency key or the parent's call key names a task
  of the same call already (nothing written), {"other-call", taskId} when it names a task of another call,
  {"parent-refused", reason, detail} when the parent cannot start a child (include/child-call.lua),
  {"resume-refused", reason, detail} when the task to resume cannot be: "missing", "not-failed" (detail: its status)
  or "resumed" (detail: the task that resumed it).
]]
--- @include "replies"
--- @include "open-request"
--- @include "expiry"
--- @include "idempotency"
--- @include "child-call"
--- @include "resume"
--- @include "bullmq-job"
local args = cjson.decode(ARGV[1])
local taskId, expiresAt, fair, job = args.taskId, args.expiresAt, args.fair, args.job
if args.open then
  local opened = openKnownSession(args.open)
  if opened ~= 0 then
    return {Reply.NOT_OPENED, opened}
  end
end
local idempotency = args.idempotency
if idempotency then
  local filed, digest = idempotentTask(idempotency.keys.entries, idempotency.key, args.now, idempotency.replace)
  if filed then
    return {digest == idempotency.digest and Reply.SAME_CALL or Reply.OTHER_CALL, filed}
  end
end
local parent, parentExpiresAt, parentOrder, childCap = args.parent, nil, nil, nil
if parent then
  local refusal
  refusal, parentExpiresAt, parentOrder, childCap = childCallRefusal(parent.keys.record, parent.keys.durable,
    parent.field, parent.attempt, parent.maxEntries, parent.maxChildren, parent.digest)
  if refusal then
    return refusal
  end
end
local resume = args.resume
if resume then
  local refusal = resumeRefusal(resume.keys.record)
  if refusal then
    return refusal
  end
end
-- What the job's part reads comes first: a script that fails does not undo its writes, so nothing it reads may fail
-- after the record is written.
local maxEvents, pausedOrMaxed
if job then
  maxEvents, pausedOrMaxed = bullmqQueueState(job.keys)
end
local count = 0
if args.maxLive then
  local cap = args.maxLive
  count = redis.call('ZCARD', KEYS[6])
  -- Entries past their expiry only matter when they could fill the cap: dropped then, not on every create.
  if count >= cap then
    count = count - redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', args.now)
    if count >= cap then
      return {Reply.OWNER_LIMIT, count}
    end
  end
  redis.call('ZADD', KEYS[6], expiresAt, taskId)
  -- The set lives as long as its longest-lived task: a set that had no member is new (and has no expiry yet).
  expireNotBefore(6, expiresAt, count > 0)
  count = count + 1
end
redis.call('HSET', KEYS[1], unpack(args.fields))
redis.call('PEXPIREAT', KEYS[1], expiresAt)
local context = args.context
if context then
  redis.call('HSET', KEYS[context.key], unpack(context.fields))
  redis.call('PEXPIREAT', KEYS[context.key], expiresAt)
end
local filed = args.filed
if filed then
  redis.call('HSET', KEYS[filed.key], filed.field, taskId)
  -- A short call never cuts a longer one's entry short; the entries themselves leave as their calls end.
  expireNotBefore(filed.key, expiresAt)
end
redis.call('ZADD', KEYS[2], args.now, taskId)
redis.call('ZADD', KEYS[3], 0, args.member)
redis.call('ZADD', KEYS[4], expiresAt, args.expiryEntry)
if args.listed then
  -- The index lives as long as its longest-lived task; the janitor removes members as their tasks expire.
  redis.call('ZADD', KEYS[5], 0, args.member)
  expireNotBefore(5, expiresAt)
end

local priority = 0
if fair then
  -- Start-time fair queueing: the job's priority is max(last[principal], V) + step, V the tool's virtual time.
  local VTIME = '\0v'
  local EXPIRY = '\0x'
  -- The hash's expiry is set this much past the task's, so that the next creates, whose tasks expire a little
  -- later, find it long enough already (read with the state below) and move it only about once per this period.
  local EXPIRY_AHEAD_MS = 60000
  local head = redis.call('ZRANGE', KEYS[fair.keys.prioritized], 0, 0, 'WITHSCORES')
  local state = redis.call('HMGET', KEYS[fair.keys.fairQueue], VTIME, fair.principal, EXPIRY)
  -- Every write below sets the virtual time: without it the hash does not exist (and has no expiry yet).
  local fresh = not state[1]
  local vtime = tonumber(state[1] or '0')
  local base = tonumber(state[2] or '0')
  if #head == 0 then
    if vtime > fair.maxPriority / 2 then
      redis.call('DEL', KEYS[fair.keys.fairQueue])
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
  priority = base + fair.step
  -- A queue that has not drained for about a million rounds falls back to arrival order for the excess.
  if priority > fair.maxPriority then
    priority = fair.maxPriority
  end
  -- The hash lives at least as long as the longest-lived task queued for the tool. Its expiry moves only when this
  -- task would outlive the one recorded (a hash written without the record, by an older runner, counts as 0).
  local expiry = fresh and 0 or tonumber(state[3] or '0')
  if expiresAt > expiry then
    expiry = expiresAt + EXPIRY_AHEAD_MS
    redis.call('HSET', KEYS[fair.keys.fairQueue], fair.principal, priority, VTIME, vtime, EXPIRY, expiry)
    -- GT when it has one: another runner may have set a later expiry without recording it here.
    expireNotBefore(fair.keys.fairQueue, expiry, not fresh)
  else
    redis.call('HSET', KEYS[fair.keys.fairQueue], fair.principal, priority, VTIME, vtime)
  end
end

if job then
  if job.kind == 'prioritized' then
    bullmqAddPrioritizedJob(job.keys, fair.keys.prioritized, taskId, job.name, job.data, job.opts, job.timestamp,
      priority, maxEvents, pausedOrMaxed)
  else
    bullmqAddStandardJob(job.keys, taskId, job.name, job.data, job.opts, job.timestamp, maxEvents, pausedOrMaxed)
  end
end
if idempotency then
  fileIdempotentTask(idempotency.keys.entries, idempotency.keys.order, idempotency.key, taskId, idempotency.digest,
    expiresAt, args.now, idempotency.maxKeys)
end
if parent then
  fileChild(parent.keys.record, parent.keys.durable, parent.keys.children, parent.field, parent.facts, parentOrder,
    taskId, parentExpiresAt, 1, childCap)
end
if resume then
  carryOver(resume.keys, resume.taskId, resume.drop, taskId, expiresAt)
end
return {Reply.CREATED, count, priority}
