--[[
  Reads a task record only for its owner. Another owner's task answers exactly like a missing one, with the same
  work on both paths (no record is sent over the wire), so neither the reply nor its timing tells them apart.

  With a watcher (an api replica about to wait for the task), an unfinished task also records it in its `waiters`
  field, in this same step: the transition script then publishes each change of the task on that replica's own
  channel (transition-6.lua), so a waiting replica needs no subscription of its own per task. The field keeps the
  last MAX_WAITERS replicas (replicas come and go; a stale id costs one PUBLISH nobody hears).

  With the keys of a request's session and rate buckets (tasks/result of a session this replica knows), the same
  step first opens the request as touch-session-6.lua does (include/open-request.lua), so that the request costs
  one round trip: a request whose session is gone or that a rate limit refuses reads nothing.

  KEYS[1] the task record hash
  KEYS[2...] to open the request in this step, exactly six: the session hash, its four rate buckets and the
          security counters (KEYS[1 .. 6] of touch-session-6.lua)

  ARGV[1] the owner asking
  ARGV[2] the watcher's id ("" to read only)
  ARGV[3 .. 14] with KEYS[2...]: ARGV[1 .. 12] of touch-session-6.lua

  Returns {opened, field1, value1, ...}: opened is 0 when the request may proceed (always, without KEYS[2...]),
  -1 when its session is gone, or the number (1..4) of the rate bucket that refused it; the fields are the record's
  as HGETALL has them (before the watcher was added), none when the request was refused, or when the task is
  missing or belongs to someone else.
]]
--- @include "open-request"
local MAX_WAITERS = 16
if #KEYS > 1 then
  local opened = openKnownSession(1 + 1, 3)
  if opened ~= 0 then
    return {opened}
  end
end
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return {0}
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
table.insert(record, 1, 0)
return record
