--[[
  Records on a live task where its external work runs (the `external` field), so that reconciliation leaves a task
  waiting for a callback alone and a cancel knows what to forward. Never creates a record: a task that expired or
  was deleted stays gone, and a task that already ended is left as it is.

  KEYS[1] the task record hash

  ARGV[1] the arguments, JSON:
    ref  the external reference, JSON

  Returns {"ok", status} when recorded, {"missing"} when the record does not exist, {"terminal", status} when the
  task already ended (the caller then forwards a cancel if it was cancelled).
]]
--- @include "replies"
local args = cjson.decode(ARGV[1])
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return {Reply.MISSING}
end
if status ~= 'working' and status ~= 'input_required' then
  return {Reply.TERMINAL, status}
end
redis.call('HSET', KEYS[1], 'external', args.ref)
return {Reply.OK, status}
