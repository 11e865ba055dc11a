--[[
  Sends an event to a task (docs/durable-execution.md, "Waits"). When the task is parked waiting for an event of that
  name, the event becomes that wait's outcome in the task's durable hash, the record no longer says it waits, and the
  caller wakes its job (BullMQ's promote); otherwise the event is kept in the task's list, for the next wait of that
  name to take (park-wait-4.lua), up to maxKept events. One step, so that an event and a wait that race meet once:
  the event is either the wait's outcome or in the list the wait reads.

  KEYS[1] the task record hash
  KEYS[2] the task's durable hash
  KEYS[3] the list of events kept for the task
  KEYS[4] the sorted set of parked tasks waiting for an event

  ARGV[1] the arguments, JSON:
    taskId    the task id
    owner     absent for an operator (or a callback token of the task); else the sender's owner, which must be the
              task's (another owner's task is answered as a missing one)
    name      the event's name
    entry     the event's JSON, `{"name":...,"at":...,"data":...}`
    maxKept   the most events kept for a task (EVENTS_MAX_KEPT)

  Returns {"delivered", tool} when a waiting task was given the event (its job is in the queue of `tool`); {"kept",
  count} when it was kept (count: the events kept now); {"missing"} when there is no such task (for this owner);
  {"ended", status} when the task has ended; {"full", count} when maxKept events are kept already.
]]
--- @include "replies"
local args = cjson.decode(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'status', 'owner', 'wait', 'createdAt', 'ttl', 'tool')
local status = f[1]
if not status or (args.owner and args.owner ~= f[2]) then
  return {Reply.MISSING}
end
if status ~= 'working' and status ~= 'input_required' then
  return {Reply.ENDED, status}
end
local expiresAt = tonumber(f[4]) + tonumber(f[5])
if f[3] then
  local wait = cjson.decode(f[3])
  if wait.kind == 'event' and wait.name == args.name then
    local field = 'w:' .. wait.key
    local stored = redis.call('HGET', KEYS[2], field)
    if stored and string.sub(stored, 1, 11) ~= '{"outcome":' then
      redis.call('HSET', KEYS[2], field, '{"outcome":' .. args.entry .. '}')
      redis.call('HDEL', KEYS[1], 'wait')
      redis.call('ZREM', KEYS[4], args.taskId)
      return {Reply.DELIVERED, f[6]}
    end
  end
end
local kept = redis.call('LLEN', KEYS[3])
if kept >= args.maxKept then
  return {Reply.FULL, tostring(kept)}
end
redis.call('RPUSH', KEYS[3], args.entry)
redis.call('PEXPIREAT', KEYS[3], expiresAt)
return {Reply.KEPT, tostring(kept + 1)}
