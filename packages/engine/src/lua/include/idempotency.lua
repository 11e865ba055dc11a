--[[
  Included (`--- @include "idempotency"`) by create-task-6.lua: the idempotency keys of tools/call
  (docs/durable-execution.md, "Idempotency keys"). A principal's keys are a hash, key -> JSON [taskId, digest of the
  call (tool and arguments), the task's expiry], with a sorted set of the same keys scored by when each was filed;
  both live as long as the longest-lived task they name (include/expiry.lua, included by the caller).

  idempotentTask(entries, key, now, replace) answers the task KEYS[entries] files under `key` and the digest of its
  call, or nothing when there is none, when that task has expired by `now`, or when it is `replace` (a task the
  caller found gone before its expiry: deleted by an operator, or a call answered synchronously).

  fileIdempotentTask(entries, order, key, taskId, digest, expiresAt, now, maxKeys) files `key` for a new task, and
  forgets the oldest keys beyond `maxKeys` (the principal's bound: IDEMPOTENCY_KEYS_PER_PRINCIPAL).
]]
local function idempotentTask(entries, key, now, replace)
  local filed = redis.call('HGET', KEYS[entries], key)
  if not filed then
    return nil
  end
  local entry = cjson.decode(filed)
  if entry[3] <= now or entry[1] == replace then
    return nil
  end
  return entry[1], entry[2]
end

local function fileIdempotentTask(entries, order, key, taskId, digest, expiresAt, now, maxKeys)
  redis.call('HSET', KEYS[entries], key, cjson.encode({taskId, digest, expiresAt}))
  redis.call('ZADD', KEYS[order], now, key)
  local count = redis.call('ZCARD', KEYS[order])
  if count > maxKeys then
    local dropped = redis.call('ZPOPMIN', KEYS[order], count - maxKeys)
    for i = 1, #dropped, 2 do
      redis.call('HDEL', KEYS[entries], dropped[i])
    end
  end
  expireNotBefore(entries, expiresAt)
  expireNotBefore(order, expiresAt)
end
