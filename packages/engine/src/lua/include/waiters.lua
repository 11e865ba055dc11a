--[[
  Included (`--- @include "waiters"`) by the scripts that read and write a task record's `waiters` field: the api
  replicas waiting for the task (tasks/result, answer streams), as ",<id>,<id>,". get-owned-1.lua adds a replica,
  transition-8.lua tells each one of every change on its own channel, so a waiting replica needs no subscription of
  its own per task. The field keeps the last MAX_WAITERS replicas (replicas come and go; a stale id costs one PUBLISH
  nobody hears).

  withWaiter(waiters, id) answers the field (`waiters`, false or nil when unset) with `id` added, the oldest id
  dropped when it is full; nil when `id` is in it already.

  tellWaiters(waiters, channelPrefix, message) publishes `message` on <channelPrefix><id> for each id in the field.
]]
local MAX_WAITERS = 16

local function withWaiter(waiters, id)
  waiters = waiters or ','
  if string.find(waiters, ',' .. id .. ',', 1, true) then
    return nil
  end
  local _, count = string.gsub(waiters, ',', '')
  if count > MAX_WAITERS then
    waiters = string.sub(waiters, string.find(waiters, ',', 2, true))
  end
  return waiters .. id .. ','
end

local function tellWaiters(waiters, channelPrefix, message)
  if not waiters then
    return
  end
  for replica in string.gmatch(waiters, '[^,]+') do
    redis.call('PUBLISH', channelPrefix .. replica, message)
  end
end
