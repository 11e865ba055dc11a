--[[
  Included (`--- @include "resume"`) by create-task-6.lua: a task that continues a failed one (an operator's
  `mcpt retry --resume`, docs/durable-execution.md, "Resuming a failed task"). It begins with what the failed task's
  tool kept, copied in the step that creates it: no attempt of the new task can start before it has them.

  resumeRefusal(record) answers nothing when the task of KEYS[record] may be resumed: it exists, it failed, and no
  task resumes it yet (a failed task is continued once). Otherwise {"resume-refused", "missing"}, {"resume-refused",
  "not-failed", status} or {"resume-refused", "resumed", the task that resumed it}.

  carryOver(keys, fromId, drop, taskId, expiresAt) names the new task on the failed one's record (`resumedBy`) and
  copies the failed task's durable hash (COPY: the results never pass through the script) to the new task's, less
  the child calls whose child is in `drop` (one that ended without a result runs again) with their facts, and the
  steps' counts of failed tries (`w:tries:<step>`: a step that failed is tried afresh). Each fact
  carried names the task that stored it (`from`), unless it names one already (a resumed task resumed again). The
  copy expires with the new task, and the new task's record (KEYS[1]) takes over the bytes its checkpoint and steps
  take (`durableBytes`, which child calls do not count): the copy counts against its DURABLE_MAX_TOTAL_BYTES.
]]
--- @include "replies"
local function resumeRefusal(record)
  local r = redis.call('HMGET', KEYS[record], 'status', 'resumedBy')
  if not r[1] then
    return {Reply.RESUME_REFUSED, Reply.MISSING}
  end
  if r[1] ~= 'failed' then
    return {Reply.RESUME_REFUSED, Reply.NOT_FAILED, r[1]}
  end
  if r[2] then
    return {Reply.RESUME_REFUSED, Reply.RESUMED, r[2]}
  end
  return nil
end

local function carryOver(keys, fromId, drop, taskId, expiresAt)
  redis.call('HSET', KEYS[keys.record], 'resumedBy', taskId)
  if redis.call('COPY', KEYS[keys.durable], KEYS[keys.copy]) == 0 then
    return
  end
  local bytes = redis.call('HGET', KEYS[keys.record], 'durableBytes')
  if bytes then
    redis.call('HSET', KEYS[1], 'durableBytes', bytes)
  end
  local dropped = {}
  for _, id in ipairs(drop) do
    dropped[id] = true
  end
  local from = '{"from":' .. cjson.encode(fromId) .. ','
  for _, field in ipairs(redis.call('HKEYS', KEYS[keys.copy])) do
    local head = string.sub(field, 1, 2)
    if head == 'c:' then
      if dropped[redis.call('HGET', KEYS[keys.copy], field)] then
        redis.call('HDEL', KEYS[keys.copy], field, 'f:' .. field)
      end
    elseif string.sub(field, 1, 8) == 'w:tries:' then
      -- A step's count of failed tries (note-tries-2.lua): the step that failed gets its tries afresh.
      redis.call('HDEL', KEYS[keys.copy], field)
    elseif head == 'f:' then
      -- false when its child call was dropped above.
      local facts = redis.call('HGET', KEYS[keys.copy], field)
      if facts and not string.find(facts, '"from":', 1, true) then
        redis.call('HSET', KEYS[keys.copy], field, from .. string.sub(facts, 2))
      end
    end
  end
  redis.call('PEXPIREAT', KEYS[keys.copy], expiresAt)
end
