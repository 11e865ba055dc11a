--[[
  Included (`--- @include "child-call"`) by create-task-6.lua: a child task started by a running tool
  (ctx.callTool, docs/durable-execution.md), created in the same step that files its id in the parent's durable hash
  under the call's key, with the call's facts (`f:<field>`: its tool and the digest of its arguments, when and by
  which attempt it was made, its order among the parent's steps and child calls). A child call is a step: a later
  attempt of the parent finds the id there and creates nothing, and no crash between the creation and the filing can
  start the child twice, since they are one step.

  childCallRefusal(parentRecord, parentDurable, field, attempt, maxEntries, maxChildren, digest) checks the parent
  before anything is written. It answers nothing when the child may be created, with the parent's expiry (epoch ms),
  the size of its durable hash (the call's order) and its cap on children; {"same-call", childId} when the call's
  key names a child of the same call already; {"other-call", childId} when it names the child of another call
  (another tool or other arguments: a replay that would guess); or {"parent-refused", reason, detail} when the parent
  cannot start one: "missing", "ended" (detail: its status), "stale" (a later attempt of the parent runs it: detail,
  its number), "full" (it keeps maxEntries steps and child tasks: detail, that count) or "children" (it has started
  as many children as its cap: detail, the cap). The cap is the parent record's `maxChildren`, which the api wrote
  when it created the task tree's root and every child inherits (so a worker's own setting cannot raise it), else
  maxChildren. Fenced as transition-8.lua fences a worker's moves (include/durable-fence.lua).

  fileChild(parentRecord, parentDurable, parentChildren, field, facts, order, childId, parentExpiresAt, childRecord,
  cap) files the new child: its id under the call's key with its facts (a JSON object, to which its `order` as `n`
  and the child's id `task` are added), in the parent's set of children (what a cancel of the parent cancels), on the
  parent's record the count of its children and the mark that it keeps durable state, and on the child's record the
  parent's cap on children. Both keys expire with the parent.
]]
--- @include "replies"
--- @include "durable-fence"
local function childCallRefusal(parentRecord, parentDurable, field, attempt, maxEntries, maxChildren, digest)
  local fenced, p = durableFence(parentRecord, attempt, 'createdAt', 'ttl', 'children', 'maxChildren')
  if fenced then
    return {Reply.PARENT_REFUSED, unpack(fenced)}
  end
  local existing = redis.call('HGET', KEYS[parentDurable], field)
  if existing then
    -- A child filed before calls had facts has no digest to compare: it is taken as the same call.
    local filed = string.match(redis.call('HGET', KEYS[parentDurable], 'f:' .. field) or '', '"digest":"([^"]*)"')
    return {(filed == nil or filed == digest) and Reply.SAME_CALL or Reply.OTHER_CALL, existing}
  end
  local cap = tonumber(p[6]) or maxChildren
  if (tonumber(p[5]) or 0) >= cap then
    return {Reply.PARENT_REFUSED, Reply.CHILDREN, tostring(cap)}
  end
  local full, fields = durableFull(parentDurable, maxEntries)
  if full then
    return {Reply.PARENT_REFUSED, unpack(full)}
  end
  return nil, tonumber(p[3]) + tonumber(p[4]), fields, cap
end

local function fileChild(parentRecord, parentDurable, parentChildren, field, facts, order, childId, parentExpiresAt,
    childRecord, cap)
  redis.call('HSET', KEYS[parentDurable], field, childId, 'f:' .. field,
    '{"n":' .. order .. ',"task":' .. cjson.encode(childId) .. ',' .. string.sub(facts, 2))
  redis.call('PEXPIREAT', KEYS[parentDurable], parentExpiresAt)
  redis.call('SADD', KEYS[parentChildren], childId)
  redis.call('PEXPIREAT', KEYS[parentChildren], parentExpiresAt)
  redis.call('HSET', KEYS[parentRecord], 'durable', '1')
  redis.call('HINCRBY', KEYS[parentRecord], 'children', 1)
  redis.call('HSET', KEYS[childRecord], 'maxChildren', cap)
end
