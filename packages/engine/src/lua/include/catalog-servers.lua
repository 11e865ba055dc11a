--[[
  Included (`--- @include "catalog-servers"`) by publish-catalog-4.lua and withdraw-catalog-4.lua: which worker
  instances serve a tool, each with its last heartbeat, in the servers hash of the catalog.

  liveServers(key, name, liveAfter) reads tool `name`'s field of the hash KEYS[key] and answers its instances whose
  last heartbeat is not older than `liveAfter` (epoch ms), as a table instance -> heartbeat; an absent field (an entry
  written by an earlier version or by another process, docs/job-contract.md) answers an empty table.
]]
local function liveServers(key, name, liveAfter)
  local servers = {}
  local raw = redis.call('HGET', KEYS[key], name)
  if not raw then
    return servers
  end
  for instance, seen in pairs(cjson.decode(raw)) do
    if tonumber(seen) >= liveAfter then
      servers[instance] = seen
    end
  end
  return servers
end
