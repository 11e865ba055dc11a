--[[
  Reads a task record only for its owner. Another owner's task answers exactly like a missing one, with the same
  work on both paths (no record is sent over the wire), so neither the reply nor its timing tells them apart.

  With a watcher (an api replica about to wait for the task), an unfinished task also records it in its `waiters`
  field, in this same step: the transition script then publishes each change of the task on that replica's own
  channel (transition-6.lua), so a waiting replica needs no subscription of its own per task. The field keeps the
  last MAX_WAITERS replicas (replicas come and go; a stale id costs one PUBLISH nobody hears).

  KEYS[1] the task record hash

  ARGV[1] the owner asking
  ARGV[2] the watcher's id ("" to read only)

  Returns the record as HGETALL does (before the watcher was added), or an empty list when it is missing or
  belongs to someone else.
]]
local MAX_WAITERS = 16
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return {}
end
local record = redis.call('HGETALL', KEYS[1])
if ARGV[2] ~= '' then
  local status, waiters
  for i = 1, #record, 2 do
    if record[i] == 'status' then
      status = record[i + 1]
    elseif record[i] == 'waiters' then
      waiters = record[i + 1]
    end
  end
  if status == 'working' or status == 'input_required' then
    waiters = waiters or ','
    if not string.find(waiters, ',' .. ARGV[2] .. ',', 1, true) then
      local _, count = string.gsub(waiters, ',', '')
      if count > MAX_WAITERS then
        waiters = string.sub(waiters, string.find(waiters, ',', 2, true))
      end
      redis.call('HSET', KEYS[1], 'waiters', waiters .. ARGV[2] .. ',')
    end
  end
end
return record
