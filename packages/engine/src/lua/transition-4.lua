--[[
  Moves a task to a new status, atomically, along the specification's state machine, and appends a status event
  to the task's session event stream in the same step, so that the stream's order is the order of the changes.
  The event holds facts, not wire JSON (the api renders it as tasks/get renders a task): the fields taskId,
  status, at (lastUpdatedAt, epoch ms), createdAt, ttl, pollInterval and, when there is one, statusMessage.

  KEYS[1] the task record hash
  KEYS[2] the set of live (non-terminal) tasks, scored by lastUpdatedAt
  KEYS[3] the event stream of the session that created the task
  KEYS[4] the owner's set of unfinished tasks (create-task-6.lua), left on a terminal move

  ARGV[1]  target status
  ARGV[2]  statuses allowed as source, comma separated (",working,input_required,")
  ARGV[3]  now, epoch ms
  ARGV[4]  statusMessage ("" removes it)
  ARGV[5]  outcome JSON ("" leaves it unset)
  ARGV[6]  "1" when the target status is terminal
  ARGV[7]  channel to publish the new status on (task waiters)
  ARGV[8]  task id
  ARGV[9]  channel that wakes the session's stream readers
  ARGV[10] idle expiry of the session stream, ms
  ARGV[11] approximate maximum length of the session stream
  ARGV[12] change of the count of outstanding input requests: "0", "1" (one more) or "-1" (one answered)

  Returns {"ok", status, lastUpdatedAt} when the status changed, {"unchanged", status, lastUpdatedAt} when an
  input-request count changed but the status stays (more requests outstanding), {"missing"} when the record does
  not exist, {"rejected", currentStatus} when the move is not allowed from the current status.
]]
local current = redis.call('HGET', KEYS[1], 'status')
if not current then
  return {'missing'}
end
if current ~= 'working' and current ~= 'input_required' then
  return {'rejected', current}
end

local delta = tonumber(ARGV[12])
if delta ~= 0 then
  local pending = redis.call('HINCRBY', KEYS[1], 'pendingInputs', delta)
  if pending < 0 then
    redis.call('HSET', KEYS[1], 'pendingInputs', 0)
    pending = 0
  end
  -- Another request is still outstanding, or the task already waits for input: the status stays.
  if (ARGV[1] == 'working' and pending > 0) or (ARGV[1] == 'input_required' and current == 'input_required') then
    return {'unchanged', current, redis.call('HGET', KEYS[1], 'lastUpdatedAt')}
  end
end

if not string.find(ARGV[2], ',' .. current .. ',', 1, true) then
  return {'rejected', current}
end

-- lastUpdatedAt must move on every change, also when two changes fall in the same millisecond.
local previous = tonumber(redis.call('HGET', KEYS[1], 'lastUpdatedAt')) or 0
local now = tonumber(ARGV[3])
if now <= previous then
  now = previous + 1
end

redis.call('HSET', KEYS[1], 'status', ARGV[1], 'lastUpdatedAt', now)
if ARGV[4] == '' then
  redis.call('HDEL', KEYS[1], 'statusMessage')
else
  redis.call('HSET', KEYS[1], 'statusMessage', ARGV[4])
end
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[1], 'outcome', ARGV[5])
end

-- Status history for operators, kept in the record so it expires with it: the creation entry plus the last 19.
local history = cjson.decode(redis.call('HGET', KEYS[1], 'history') or '[]')
table.insert(history, {now, ARGV[1], ARGV[4]})
if #history > 20 then
  table.remove(history, 2)
end
redis.call('HSET', KEYS[1], 'history', cjson.encode(history))

if ARGV[6] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[8])
  -- Frees the task's slot in its owner's cap of unfinished tasks (a no-op when the task was created uncapped).
  redis.call('ZREM', KEYS[4], ARGV[8])
else
  redis.call('ZADD', KEYS[2], now, ARGV[8])
end
redis.call('PUBLISH', ARGV[7], ARGV[1])

-- Plain calls are not tasks for the client: no status notifications for them.
local fields = redis.call('HMGET', KEYS[1], 'kind', 'createdAt', 'ttl', 'pollInterval')
if fields[1] == 'task' then
  local event = {'taskId', ARGV[8], 'status', ARGV[1], 'at', now, 'createdAt', fields[2], 'ttl', fields[3],
    'pollInterval', fields[4]}
  if ARGV[4] ~= '' then
    table.insert(event, 'statusMessage')
    table.insert(event, ARGV[4])
  end
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[11], '*', unpack(event))
  redis.call('PEXPIRE', KEYS[3], ARGV[10])
  redis.call('PUBLISH', ARGV[9], '1')
end

return {'ok', ARGV[1], tostring(now)}
