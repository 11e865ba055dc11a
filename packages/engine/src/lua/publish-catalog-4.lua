--[[
  Publishes the catalog entries of one worker (at start-up and on every heartbeat), refusing a definition that
  differs from a live one under the same name, and drops the entries no worker has refreshed for the grace period.
  Records which worker published each entry, so that a process that refuses an entry at read can name it, and when
  each worker instance last published it, so that a worker that stops withdraws only what no other live worker
  serves (withdraw-catalog-4.lua).

  KEYS[1] the catalog hash, tool name -> entry (canonical JSON)
  KEYS[2] the sorted set of tool names scored by their last heartbeat (ms)
  KEYS[3] the hash of publishers, tool name -> the worker that last published its entry
  KEYS[4] the hash of servers, tool name -> JSON {instance = its last heartbeat (ms)}

  ARGV[1] the arguments, JSON:
    now        epoch ms
    liveAfter  epoch ms: an entry whose last heartbeat is older is gone
    channel    the channel to publish on when the catalog changed
    publisher  the worker's name
    instance   the worker's unique id (two workers of one process share a name)
    entries    the worker's entries, each {name = the tool's name, json = its entry, publisher = who publishes it
               when not the worker itself (a tool of an upstream it fronts: '<worker>/<upstream>'), or absent}

  Returns {"conflict", name, live entry} without writing anything, or {"ok", 1 if the catalog changed else 0}.
]]
--- @include "replies"
--- @include "catalog-servers"
local args = cjson.decode(ARGV[1])
local entries = args.entries

for _, entry in ipairs(entries) do
  local current = redis.call('HGET', KEYS[1], entry.name)
  if current and current ~= entry.json then
    local seen = redis.call('ZSCORE', KEYS[2], entry.name)
    if seen and tonumber(seen) >= args.liveAfter then
      return {Reply.CONFLICT, entry.name, current}
    end
  end
end

local changed = 0
for _, name in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', string.format('(%d', args.liveAfter))) do
  redis.call('HDEL', KEYS[1], name)
  redis.call('HDEL', KEYS[3], name)
  redis.call('HDEL', KEYS[4], name)
  redis.call('ZREM', KEYS[2], name)
  changed = 1
end
for _, entry in ipairs(entries) do
  local current = redis.call('HGET', KEYS[1], entry.name)
  if current ~= entry.json then
    redis.call('HSET', KEYS[1], entry.name, entry.json)
    changed = 1
  end
  -- Written only when another worker published last: a heartbeat of the same worker writes nothing more.
  local publisher = entry.publisher or args.publisher
  if redis.call('HGET', KEYS[3], entry.name) ~= publisher then
    redis.call('HSET', KEYS[3], entry.name, publisher)
  end
  local servers = liveServers(4, entry.name, args.liveAfter)
  servers[args.instance] = args.now
  redis.call('HSET', KEYS[4], entry.name, cjson.encode(servers))
  redis.call('ZADD', KEYS[2], args.now, entry.name)
end
if changed == 1 then
  redis.call('PUBLISH', args.channel, '1')
end
return {Reply.OK, changed}
