--[[
  Reads a task record only for its owner. Another owner's task answers exactly like a missing one, with the same
  work on both paths (no record is sent over the wire), so neither the reply nor its timing tells them apart.

  With a watcher (an api replica about to wait for the task), an unfinished task also records it in its `waiters`
  field, in this same step (include/waiters.lua): the transition script then publishes each change of the task on
  that replica's own channel.

  With the opening of a request (tasks/result of a session this replica knows), the same step first opens the
  request as touch-session-6.lua does (include/open-request.lua), so that the request costs one round trip: a
  request whose session is gone or that a rate limit refuses reads nothing.

  KEYS[1] the task record hash
  KEYS[2...] with `open`: its keys (the session hash, its four rate buckets and the security counters), each at
          the index `open` names

  ARGV[1] the arguments, JSON:
    owner    the owner asking
    watcher  the watcher's id (absent to read only)
    open     absent, or the opening of the request (include/open-request.lua)

  Returns {opened, field1, value1, ...}: opened is 0 when the request may proceed (always, without `open`), -1 when
  its session is gone, or the number (1..4) of the rate bucket that refused it; the fields are the record's as
  HGETALL has them (before the watcher was added), none when the request was refused, or when the task is missing
  or belongs to someone else.
]]
--- @include "open-request"
--- @include "waiters"
local args = cjson.decode(ARGV[1])
if args.open then
  local opened = openKnownSession(args.open)
  if opened ~= 0 then
    return {opened}
  end
end
if redis.call('HGET', KEYS[1], 'owner') ~= args.owner then
  return {0}
end
local record = redis.call('HGETALL', KEYS[1])
if args.watcher then
  local status, waiters
  for i = 1, #record, 2 do
    if record[i] == 'status' then
      status = record[i + 1]
    elseif record[i] == 'waiters' then
      waiters = record[i + 1]
    end
  end
  if status == 'working' or status == 'input_required' then
    local added = withWaiter(waiters, args.watcher)
    if added then
      redis.call('HSET', KEYS[1], 'waiters', added)
    end
  end
end
table.insert(record, 1, 0)
return record
