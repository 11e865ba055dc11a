--[[
  Withdraws the catalog entries of a worker that stops cleanly (docs/catalog.md), so that a worker started next with
  a changed definition of one of its tools is not refused for the grace period by the entry of its predecessor. An
  entry another live worker still serves stays, as does one whose heartbeat is newer than this worker's (another
  process refreshed it: an external consumer writing the hash itself, docs/job-contract.md).

  KEYS[1] the catalog hash, tool name -> entry (canonical JSON)
  KEYS[2] the sorted set of tool names scored by their last heartbeat (ms)
  KEYS[3] the hash of publishers, tool name -> the worker that last published its entry
  KEYS[4] the hash of servers, tool name -> JSON {instance = its last heartbeat (ms)}

  ARGV[1] the arguments, JSON:
    liveAfter  epoch ms: a heartbeat older than this is gone
    channel    the channel to publish on when the catalog changed
    instance   the worker's unique id, as it published
    names      the names of the tools it published

  Returns the number of entries removed.
]]
--- @include "catalog-servers"
local args = cjson.decode(ARGV[1])

local removed = 0
for _, name in ipairs(args.names) do
  local servers = liveServers(4, name, args.liveAfter)
  local own = servers[args.instance]
  if own then
    servers[args.instance] = nil
    local seen = tonumber(redis.call('ZSCORE', KEYS[2], name) or 0)
    if next(servers) == nil and seen <= tonumber(own) then
      redis.call('HDEL', KEYS[1], name)
      redis.call('HDEL', KEYS[3], name)
      redis.call('HDEL', KEYS[4], name)
      redis.call('ZREM', KEYS[2], name)
      removed = removed + 1
    else
      redis.call('HSET', KEYS[4], name, cjson.encode(servers))
    end
  end
end
if removed > 0 then
  redis.call('PUBLISH', args.channel, '1')
end
return removed
