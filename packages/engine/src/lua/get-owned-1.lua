--[[
  Reads a task record only for its owner. Another owner's task answers exactly like a missing one, with the same
  work on both paths (no record is sent over the wire), so neither the reply nor its timing tells them apart.

  With a watcher (an api replica about to wait for the task), an unfinished task also records it in its `waiters`
  field, in this same step (include/waiters.lua): the transition script then publishes each change of the task on
  that replica's own channel.

  With the opening of a request (tasks/result of a session this replica knows), the same step first opens the
  request as touch-session-6.lua does (include/open-request.lua), so that the request costs one round trip: a
  request whose session is gone or that a rate limit refuses reads nothing.

  With `since` (tasks/result of a client that accepts SSE: an answer that may turn into a stream of the task's
  session events), an unfinished task of that session also answers where its event stream stands, read in the same
  step as the record: the stream carries every event from that read on, and costs no command of its own.

  KEYS[1] the task record hash
  KEYS[2...] the keys of `open` (the session hash, its four rate buckets and the security counters) and `since`
          (the session's event stream), each at the index its table names

  ARGV[1] the arguments, JSON:
    owner    the owner asking
    watcher  the watcher's id (absent to read only)
    open     absent, or the opening of the request (include/open-request.lua)
    since    absent, or the session event stream to read the position of: {key = its KEYS index, session = the
             session id it belongs to (read only for a task of that session)}

  Returns {opened, since, field1, value1, ...}: opened is 0 when the request may proceed (always, without `open`),
  -1 when its session is gone, or the number (1..4) of the rate bucket that refused it; since is the id of the
  newest entry of the `since` stream ("0-0" when it has none) for an unfinished task of its session, else ""; the
  fields are the record's as HGETALL has them (before the watcher was added). Only {opened} when the request was
  refused; no fields when the task is missing or belongs to someone else.
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
  return {0, ''}
end
local record = redis.call('HGETALL', KEYS[1])
local since = ''
if args.watcher or args.since then
  local status, waiters, session
  for i = 1, #record, 2 do
    local field = record[i]
    if field == 'status' then
      status = record[i + 1]
    elseif field == 'waiters' then
      waiters = record[i + 1]
    elseif field == 'sessionId' then
      session = record[i + 1]
    end
  end
  if status == 'working' or status == 'input_required' then
    if args.watcher then
      local added = withWaiter(waiters, args.watcher)
      if added then
        redis.call('HSET', KEYS[1], 'waiters', added)
      end
    end
    if args.since and session == args.since.session then
      local newest = redis.call('XREVRANGE', KEYS[args.since.key], '+', '-', 'COUNT', 1)[1]
      since = newest and newest[1] or '0-0'
    end
  end
end
table.insert(record, 1, since)
table.insert(record, 1, 0)
return record
