--[[
  Included (`--- @include "durable-fence"`) by the scripts that write a task's durable hash for one attempt of its
  job (save-durable-3.lua, park-wait-4.lua, take-input-4.lua, note-tries-2.lua, and include/child-call.lua for the
  parent of a child task): the fence they share, the one transition-8.lua puts on a worker's moves. Once a later
  attempt of the task's job has started, an earlier one can no longer write; nor can anyone once the task has ended.

  durableFence(record, attempt, ...) reads the record KEYS[record]: its `status`, its `attempt` and the fields named
  after `attempt` (one HMGET). It answers the refusal when `attempt` may not write: {"missing"} when the record does
  not exist, {"ended", status} when the task has ended, {"stale", latestAttempt} when a later attempt has started;
  otherwise nil and the fields read (status, attempt, then the others in their order).

  durableFull(durable, maxEntries) counts the steps and child calls the durable hash KEYS[durable] keeps: each takes
  two fields (its value and its facts, `f:<field>`), a checkpoint, a wait or a step's count of tries one, so the
  hash's size halved. It answers {"full", count} when that count is maxEntries or more, otherwise nil; and the
  hash's size (its number of fields: the order a new entry's facts record).
]]
--- @include "replies"
local function durableFence(record, attempt, ...)
  local f = redis.call('HMGET', KEYS[record], 'status', 'attempt', ...)
  local status = f[1]
  if not status then
    return {Reply.MISSING}
  end
  if status ~= 'working' and status ~= 'input_required' then
    return {Reply.ENDED, status}
  end
  local latest = tonumber(f[2]) or 0
  if attempt < latest then
    return {Reply.STALE, tostring(latest)}
  end
  return nil, f
end

local function durableFull(durable, maxEntries)
  local fields = redis.call('HLEN', KEYS[durable])
  local count = math.floor(fields / 2)
  if count >= maxEntries then
    return {Reply.FULL, tostring(count)}, fields
  end
  return nil, fields
end
