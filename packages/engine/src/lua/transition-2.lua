--[[
  Moves a task to a new status, atomically, along the specification's state machine.

  KEYS[1] the task record hash
  KEYS[2] the set of live (non-terminal) tasks, scored by lastUpdatedAt

  ARGV[1] target status
  ARGV[2] statuses allowed as source, comma separated (",working,input_required,")
  ARGV[3] now, epoch ms
  ARGV[4] statusMessage ("" removes it)
  ARGV[5] outcome JSON ("" leaves it unset)
  ARGV[6] "1" when the target status is terminal
  ARGV[7] channel to publish the new status on
  ARGV[8] task id

  Returns {"ok", status, lastUpdatedAt} on success, {"missing"} when the record does not exist (expired or never
  created), {"rejected", currentStatus} when the move is not allowed from the current status.
]]
local current = redis.call('HGET', KEYS[1], 'status')
if not current then
  return {'missing'}
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

if ARGV[6] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[8])
else
  redis.call('ZADD', KEYS[2], now, ARGV[8])
end
redis.call('PUBLISH', ARGV[7], ARGV[1])
return {'ok', ARGV[1], tostring(now)}
