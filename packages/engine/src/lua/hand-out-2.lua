--[[
  Hands a plain call out as a task (a task handle, docs/clients.md): a tools/call of a client that did not negotiate
  Tasks, still running after HANDLE_AFTER_MS, is answered with its record's id, and from then on the record is a task
  like any other. Its kind becomes `task` (tasks/get, tasks/list and the handle tools read it; its answer no longer
  deletes it) and it enters its owner's task index, which lives as long as its longest-lived member
  (include/expiry.lua), as create-task-6.lua files a task. A call that has ended meanwhile is left as it is: the
  caller answers its result instead.

  KEYS[1] the record hash
  KEYS[2] the owner's task index (tasks/list)

  ARGV[1] the arguments, JSON:
    owner      the owner the call must have (another owner's record answers as a missing one)
    member     the record's index member
    expiresAt  its expiry, epoch ms

  Returns {"handed", status} when the record is a task now (made so here, or by an earlier hand-out), {"ended",
  status} when the call has ended (nothing changed), {"missing"} when the record is gone or someone else's.
]]
--- @include "replies"
--- @include "expiry"
local args = cjson.decode(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'status', 'kind', 'owner')
local status, kind = f[1], f[2]
if not status or f[3] ~= args.owner then
  return {Reply.MISSING}
end
if kind == 'task' then
  return {Reply.HANDED, status}
end
if status ~= 'working' and status ~= 'input_required' then
  return {Reply.ENDED, status}
end
redis.call('HSET', KEYS[1], 'kind', 'task')
redis.call('ZADD', KEYS[2], 0, args.member)
expireNotBefore(2, args.expiresAt, nil)
return {Reply.HANDED, status}
