--[[
  Moves a task to a new status, atomically, along the specification's state machine, and appends a status event
  to the task's session event stream in the same step, so that the stream's order is the order of the changes.
  The event holds facts, not wire JSON (the api renders it as tasks/get renders a task): the fields taskId,
  status, at (lastUpdatedAt, epoch ms), createdAt, ttl, pollInterval and, when there is one, statusMessage.

  Three guards come before the move. A worker's move carries its attempt (the BullMQ job's attemptsStarted): once
  a later attempt has started, an earlier one can no longer move the task (a worker that lost its job lock and
  runs on). A move may carry what the caller read (lastUpdatedAt, whether an external reference was set): it is
  refused when the record changed since (the reconciler's compare-and-set). And the start of an attempt withdraws
  the input requests earlier attempts left outstanding, with the status back to working, in this same step.

  KEYS[1] the task record hash
  KEYS[2] the set of live (non-terminal) tasks, scored by lastUpdatedAt
  KEYS[3] the event stream of the session that created the task
  KEYS[4] the owner's set of unfinished tasks (create-task-6.lua), left on a terminal move
  KEYS[5] the set of the task's outstanding input request ids; it expires with the task
  KEYS[6] the session's hash of input requests waiting for its client (request id -> request)
  KEYS[7] the task's webhook outbox (list), written only when the record has a `webhook` field; it expires with the
          task
  KEYS[8] the set of tasks with webhook deliveries due (scored by when), written likewise
  KEYS[9...] with `begin`: the hashes of the input requests to withdraw, each at the index its entry names

  ARGV[1] the arguments, JSON:
    taskId          the task id
    to              the target status; absent: the status stays what it is (a note of an attempt's end)
    from            the statuses allowed as source (a list)
    now             epoch ms
    statusMessage   the new statusMessage (absent: removed)
    outcome         JSON of the outcome (absent: left as it is)
    terminal        true when the target status is terminal
    waiterChannels  the prefix of the api replicas' channels: each replica in the record's `waiters`
                    (include/waiters.lua) is told the task id on <prefix><replica id>, on every change (of the
                    outstanding input requests too)
    sessionChannel  the channel that wakes the session's stream readers
    stream          the session stream's {idleMs = idle expiry, ms; maxLength = approximate maximum length}
    input           absent, or the change of the outstanding input requests: {requestId, delta = 1 (asked) or -1
                    (answered or abandoned)}
    attempt         the attempt making the move (absent for a move from outside a worker, such as a cancel: not
                    fenced)
    begin           present when this move starts `attempt`: earlier attempts' requests are withdrawn, the count
                    reset; begin.withdraw lists the requests to withdraw, each {key = the KEYS index of its hash,
                    requestId, notice = the notifications/cancelled message (JSON) to append to the session's stream}
    unchangedSince  absent (not checked), or what the caller read: {lastUpdatedAt, external = whether an external
                    reference was set}
    run             absent, or the attempt this move is part of: {attempt, worker = its worker's name, startedAt =
                    epoch ms, ending = absent while it runs, else how it ended: completed, failed, lost, handed-back};
                    the move's history entry carries it as a fourth element {a, w, s, e}, from which readers list the
                    task's attempts (records/codec.ts). A handed-back attempt counts in the record's `handBacks`.
    webhooks        {maxPending = the most deliveries a task's outbox holds (a change past it is not delivered but
                    counted in the record's `webhookDropped`; never the terminal one), channel = where a queued
                    delivery wakes the workers' delivery loops}

  A task (not a plain call) whose record has a `webhook` field (JSON {url, events}) gets, in this same step, a
  delivery in its outbox for a terminal move, and with events "all" for every change of status (not for a new
  statusMessage alone): the facts {status, at, message}, rendered and signed by the delivery loop
  (docs/webhooks.md). A record without one costs no command more than before.

  Returns {"ok", status, lastUpdatedAt} when the status changed (with `begin`, {"ok", status, lastUpdatedAt, durable}:
  durable "1" when the record says the task keeps durable state, save-durable-3.lua); {"unchanged", status, lastUpdatedAt} when an
  input request was counted but the status stays (more requests outstanding, or a request already withdrawn);
  {"missing"} when the record does not exist; {"rejected", currentStatus} when the move is not allowed from the
  current status; {"stale", currentStatus, attempt} when `attempt` is older than the latest one started
  (attempt); {"changed", currentStatus} when the record is no longer what the caller read; {"withdraw", id...}
  when `begin` is set and the outstanding requests are not those given (nothing changed: call again with these).
]]
--- @include "replies"
--- @include "waiters"
local args = cjson.decode(ARGV[1])
local taskId, message = args.taskId, args.statusMessage

-- Appends an entry to the session's event stream, trimmed to about its maximum length.
local function appendEvent(fields)
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', args.stream.maxLength, '*', unpack(fields))
end
-- After appending: the stream lives as long as its session may read it, and its readers wake.
local function streamAppended()
  redis.call('PEXPIRE', KEYS[3], args.stream.idleMs)
  redis.call('PUBLISH', args.sessionChannel, '1')
end

-- One read of every field the move needs.
local f = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'lastUpdatedAt', 'external', 'kind', 'createdAt', 'ttl',
  'pollInterval', 'history', 'waiters', 'durable', 'webhook')
local current = f[1]
if not current then
  return {Reply.MISSING}
end
local to = args.to or current
if current ~= 'working' and current ~= 'input_required' then
  return {Reply.REJECTED, current}
end

if args.attempt then
  local latest = tonumber(f[2]) or 0
  if args.attempt < latest then
    return {Reply.STALE, current, tostring(latest)}
  end
end
local since = args.unchangedSince
if since and (tonumber(f[3]) ~= since.lastUpdatedAt or (f[4] and true or false) ~= since.external) then
  return {Reply.CHANGED, current}
end

if args.begin then
  -- The caller names the requests to withdraw (a script may touch only the keys it is given): check the list.
  local withdraw = args.begin.withdraw
  local same = redis.call('SCARD', KEYS[5]) == #withdraw
  for _, request in ipairs(withdraw) do
    if not same then
      break
    end
    same = redis.call('SISMEMBER', KEYS[5], request.requestId) == 1
  end
  if not same then
    return {Reply.WITHDRAW, unpack(redis.call('SMEMBERS', KEYS[5]))}
  end
  for _, request in ipairs(withdraw) do
    -- Deleting the request makes a late answer to it get the same refusal as an unknown id.
    redis.call('DEL', KEYS[request.key])
    redis.call('HDEL', KEYS[6], request.requestId)
    appendEvent({'taskId', taskId, 'message', request.notice})
  end
  if #withdraw > 0 then
    redis.call('DEL', KEYS[5])
    streamAppended()
  end
  redis.call('HSET', KEYS[1], 'attempt', args.attempt, 'pendingInputs', 0)
end

local input = args.input
if input then
  local counted
  if input.delta > 0 then
    counted = redis.call('SADD', KEYS[5], input.requestId)
    redis.call('PEXPIREAT', KEYS[5], tonumber(f[6]) + tonumber(f[7]))
  else
    counted = redis.call('SREM', KEYS[5], input.requestId)
  end
  local pending = redis.call('SCARD', KEYS[5])
  redis.call('HSET', KEYS[1], 'pendingInputs', pending)
  -- A request counted already (or withdrawn already), another request still outstanding, or the task already
  -- waiting for input: the status stays.
  if counted == 0 or (to == 'working' and pending > 0) or (to == 'input_required' and current == 'input_required') then
    -- The status stays, but what a reader renders changed when the set did (a second question asked, one of two
    -- answered: the 2026 wire shows the outstanding requests): wake the waiting replicas, or a listen stream or a
    -- waiting call would learn of it only at its next periodic re-read.
    if counted ~= 0 then
      tellWaiters(f[10], args.waiterChannels, taskId)
    end
    return {Reply.UNCHANGED, current, f[3]}
  end
end

local allowed = false
for _, source in ipairs(args.from) do
  allowed = allowed or source == current
end
if not allowed then
  return {Reply.REJECTED, current}
end

-- lastUpdatedAt must move on every change, also when two changes fall in the same millisecond.
local previous = tonumber(f[3]) or 0
local now = args.now
if now <= previous then
  now = previous + 1
end

-- Status history for operators, kept in the record so it expires with it: the creation entry plus the last 19.
-- Appended as text; decoded only to drop an entry once it is full. Counting "],[" may count one inside a message
-- too, which only makes the exact path below run earlier.
local entry = {now, to, message or ''}
local run = args.run
if run then
  -- Which attempt of the task's job made the move, on which worker, since when, and how it ended if it did.
  entry[4] = {a = run.attempt, w = run.worker, s = run.startedAt or now, e = run.ending}
  if run.ending == 'handed-back' then
    redis.call('HINCRBY', KEYS[1], 'handBacks', 1)
  end
end
local history = f[9] or '[]'
local _, separators = string.gsub(history, '%],%[', '')
if history == '[]' then
  history = '[' .. cjson.encode(entry) .. ']'
elseif separators + 1 < 20 then
  history = string.sub(history, 1, -2) .. ',' .. cjson.encode(entry) .. ']'
else
  local entries = cjson.decode(history)
  table.insert(entries, entry)
  while #entries > 20 do
    table.remove(entries, 2)
  end
  history = cjson.encode(entries)
end

local set = {'status', to, 'lastUpdatedAt', now, 'history', history}
if message then
  table.insert(set, 'statusMessage')
  table.insert(set, message)
end
if args.outcome then
  table.insert(set, 'outcome')
  table.insert(set, args.outcome)
end

redis.call('HSET', KEYS[1], unpack(set))
if not message then
  redis.call('HDEL', KEYS[1], 'statusMessage')
end

if args.terminal then
  redis.call('ZREM', KEYS[2], taskId)
  -- Frees the task's slot in its owner's cap of unfinished tasks (a no-op when the task was created uncapped).
  redis.call('ZREM', KEYS[4], taskId)
else
  redis.call('ZADD', KEYS[2], now, taskId)
end

-- Wakes the api replicas waiting for this task (tasks/result, answer streams), and only those.
tellWaiters(f[10], args.waiterChannels, taskId)

-- Plain calls are not tasks for the client: no status notifications for them.
if f[5] == 'task' then
  local event = {'taskId', taskId, 'status', to, 'at', now, 'createdAt', f[6], 'ttl', f[7], 'pollInterval', f[8]}
  if message then
    table.insert(event, 'statusMessage')
    table.insert(event, message)
  end
  appendEvent(event)
  streamAppended()
end

-- The task's webhook delivery, queued with the change that causes it: a worker that delivers it later may die, but
-- the change cannot happen without it (docs/webhooks.md).
-- Only a task's: a plain call is answered on its request, and a call its client follows with task handles is a task
-- once handed out (hand-out-2.lua), its deliveries from then on.
if f[12] and f[5] == 'task' then
  -- A field this script cannot read never fails the move itself (it is ours, written as JSON by the create step).
  local read, hook = pcall(cjson.decode, f[12])
  local events = read and type(hook) == 'table' and hook.events or 'terminal'
  if args.terminal or (events == 'all' and to ~= current) then
    if not args.terminal and redis.call('LLEN', KEYS[7]) >= args.webhooks.maxPending then
      redis.call('HINCRBY', KEYS[1], 'webhookDropped', 1)
    else
      redis.call('RPUSH', KEYS[7], cjson.encode({status = to, at = now, message = message}))
      redis.call('PEXPIREAT', KEYS[7], tonumber(f[6]) + tonumber(f[7]))
      -- NX: a task waiting for a retry's backoff, or held by a delivering worker, keeps its turn (order per task).
      redis.call('ZADD', KEYS[8], 'NX', now, taskId)
      redis.call('PUBLISH', args.webhooks.channel, '1')
    end
  end
end

-- The attempt this move starts learns whether its task keeps durable state, read in this step: from now on no earlier
-- attempt can add to it, so a tool that stored something before is sure to find it (docs/durable-execution.md).
if args.begin then
  return {Reply.OK, to, tostring(now), f[11] and '1' or '0'}
end
return {Reply.OK, to, tostring(now)}
