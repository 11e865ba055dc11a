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
  KEYS[7...] when ARGV[15] is "1": the hashes of the input requests to withdraw, one per id in ARGV[18...]

  ARGV[1]  target status
  ARGV[2]  statuses allowed as source, comma separated (",working,input_required,")
  ARGV[3]  now, epoch ms
  ARGV[4]  statusMessage ("" removes it)
  ARGV[5]  outcome JSON ("" leaves it unset)
  ARGV[6]  "1" when the target status is terminal
  ARGV[7]  the prefix of the api replicas' channels: each replica in the record's `waiters` (get-owned-1.lua) is
           told the task id on <prefix><replica id>, on every change (of the outstanding input requests too)
  ARGV[8]  task id
  ARGV[9]  channel that wakes the session's stream readers
  ARGV[10] idle expiry of the session stream, ms
  ARGV[11] approximate maximum length of the session stream
  ARGV[12] change of the outstanding input requests: "0", "1" (ARGV[13] asked) or "-1" (ARGV[13] answered or
           abandoned)
  ARGV[13] the input request id ARGV[12] is about ("" when ARGV[12] is "0")
  ARGV[14] the attempt making the move ("" for a move from outside a worker, such as a cancel: not fenced)
  ARGV[15] "1" when this move starts attempt ARGV[14]: earlier attempts' requests are withdrawn, the count reset
  ARGV[16] lastUpdatedAt as the caller read it ("" not checked)
  ARGV[17] "1" or "0": whether the caller read an external reference on the record ("" not checked)
  ARGV[18...] when ARGV[15] is "1", per request to withdraw (in the order of KEYS[7...]): its id, then the
           notifications/cancelled message (JSON) to append to the session's stream

  Returns {"ok", status, lastUpdatedAt} when the status changed; {"unchanged", status, lastUpdatedAt} when an
  input request was counted but the status stays (more requests outstanding, or a request already withdrawn);
  {"missing"} when the record does not exist; {"rejected", currentStatus} when the move is not allowed from the
  current status; {"stale", currentStatus, attempt} when attempt ARGV[14] is older than the latest one started
  (attempt); {"changed", currentStatus} when the record is no longer what the caller read; {"withdraw", id...}
  when ARGV[15] is "1" and the outstanding requests are not those given (nothing changed: call again with these).
]]
-- One read of every field the move needs.
local f = redis.call('HMGET', KEYS[1], 'status', 'attempt', 'lastUpdatedAt', 'external', 'kind', 'createdAt', 'ttl',
  'pollInterval', 'history', 'waiters')
local current = f[1]
if not current then
  return {'missing'}
end
if current ~= 'working' and current ~= 'input_required' then
  return {'rejected', current}
end

if ARGV[14] ~= '' then
  local latest = tonumber(f[2]) or 0
  if tonumber(ARGV[14]) < latest then
    return {'stale', current, tostring(latest)}
  end
end
if ARGV[16] ~= '' and tonumber(f[3]) ~= tonumber(ARGV[16]) then
  return {'changed', current}
end
if ARGV[17] ~= '' and (f[4] and '1' or '0') ~= ARGV[17] then
  return {'changed', current}
end

if ARGV[15] == '1' then
  -- The caller names the requests to withdraw (a script may touch only the keys it is given): check the list.
  local given = #KEYS - 6
  local same = redis.call('SCARD', KEYS[5]) == given
  for i = 1, given do
    if not same then
      break
    end
    same = redis.call('SISMEMBER', KEYS[5], ARGV[16 + 2 * i]) == 1
  end
  if not same then
    return {'withdraw', unpack(redis.call('SMEMBERS', KEYS[5]))}
  end
  for i = 1, given do
    -- Deleting the request makes a late answer to it get the same refusal as an unknown id.
    redis.call('DEL', KEYS[6 + i])
    redis.call('HDEL', KEYS[6], ARGV[16 + 2 * i])
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[11], '*', 'taskId', ARGV[8], 'message', ARGV[17 + 2 * i])
  end
  if given > 0 then
    redis.call('DEL', KEYS[5])
    redis.call('PEXPIRE', KEYS[3], ARGV[10])
    redis.call('PUBLISH', ARGV[9], '1')
  end
  redis.call('HSET', KEYS[1], 'attempt', ARGV[14], 'pendingInputs', 0)
end

local delta = tonumber(ARGV[12])
if delta ~= 0 then
  local counted
  if delta > 0 then
    counted = redis.call('SADD', KEYS[5], ARGV[13])
    redis.call('PEXPIREAT', KEYS[5], tonumber(f[6]) + tonumber(f[7]))
  else
    counted = redis.call('SREM', KEYS[5], ARGV[13])
  end
  local pending = redis.call('SCARD', KEYS[5])
  redis.call('HSET', KEYS[1], 'pendingInputs', pending)
  -- A request counted already (or withdrawn already), another request still outstanding, or the task already
  -- waiting for input: the status stays.
  if counted == 0 or (ARGV[1] == 'working' and pending > 0)
      or (ARGV[1] == 'input_required' and current == 'input_required') then
    -- The status stays, but what a reader renders changed when the set did (a second question asked, one of two
    -- answered: the 2026 wire shows the outstanding requests): wake the waiting replicas, or a listen stream or a
    -- waiting call would learn of it only at its next periodic re-read.
    if counted ~= 0 and f[10] then
      for replica in string.gmatch(f[10], '[^,]+') do
        redis.call('PUBLISH', ARGV[7] .. replica, ARGV[8])
      end
    end
    return {'unchanged', current, f[3]}
  end
end

if not string.find(ARGV[2], ',' .. current .. ',', 1, true) then
  return {'rejected', current}
end

-- lastUpdatedAt must move on every change, also when two changes fall in the same millisecond.
local previous = tonumber(f[3]) or 0
local now = tonumber(ARGV[3])
if now <= previous then
  now = previous + 1
end

-- Status history for operators, kept in the record so it expires with it: the creation entry plus the last 19.
-- Appended as text; decoded only to drop an entry once it is full. Counting "],[" may count one inside a message
-- too, which only makes the exact path below run earlier.
local history = f[9] or '[]'
local _, separators = string.gsub(history, '%],%[', '')
if history == '[]' then
  history = '[' .. cjson.encode({now, ARGV[1], ARGV[4]}) .. ']'
elseif separators + 1 < 20 then
  history = string.sub(history, 1, -2) .. ',' .. cjson.encode({now, ARGV[1], ARGV[4]}) .. ']'
else
  local entries = cjson.decode(history)
  table.insert(entries, {now, ARGV[1], ARGV[4]})
  while #entries > 20 do
    table.remove(entries, 2)
  end
  history = cjson.encode(entries)
end

local set = {'status', ARGV[1], 'lastUpdatedAt', now, 'history', history}
if ARGV[4] ~= '' then
  table.insert(set, 'statusMessage')
  table.insert(set, ARGV[4])
end
if ARGV[5] ~= '' then
  table.insert(set, 'outcome')
  table.insert(set, ARGV[5])
end
redis.call('HSET', KEYS[1], unpack(set))
if ARGV[4] == '' then
  redis.call('HDEL', KEYS[1], 'statusMessage')
end

if ARGV[6] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[8])
  -- Frees the task's slot in its owner's cap of unfinished tasks (a no-op when the task was created uncapped).
  redis.call('ZREM', KEYS[4], ARGV[8])
else
  redis.call('ZADD', KEYS[2], now, ARGV[8])
end

-- Wakes the api replicas waiting for this task (tasks/result, answer streams), and only those.
if f[10] then
  for replica in string.gmatch(f[10], '[^,]+') do
    redis.call('PUBLISH', ARGV[7] .. replica, ARGV[8])
  end
end

-- Plain calls are not tasks for the client: no status notifications for them.
if f[5] == 'task' then
  local event = {'taskId', ARGV[8], 'status', ARGV[1], 'at', now, 'createdAt', f[6], 'ttl', f[7],
    'pollInterval', f[8]}
  if ARGV[4] ~= '' then
    table.insert(event, 'statusMessage')
    table.insert(event, ARGV[4])
  end
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[11], '*', unpack(event))
  redis.call('PEXPIRE', KEYS[3], ARGV[10])
  redis.call('PUBLISH', ARGV[9], '1')
end

return {'ok', ARGV[1], tostring(now)}
