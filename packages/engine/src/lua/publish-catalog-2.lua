--[[
  Publishes the catalog entries of one worker (at start-up and on every heartbeat), refusing a definition that
  differs from a live one under the same name, and drops the entries no worker has refreshed for the grace period.

  KEYS[1] the catalog hash, tool name -> entry (canonical JSON)
  KEYS[2] the sorted set of tool names scored by their last heartbeat (ms)

  ARGV[1] now (ms)
  ARGV[2] live after (ms): an entry whose last heartbeat is older is gone
  ARGV[3] the channel to publish on when the catalog changed
  ARGV[4..] pairs of tool name and entry

  Returns {'conflict', name, live entry} without writing anything, or {'ok', 1 if the catalog changed else 0}.
]]
local now = tonumber(ARGV[1])
local liveAfter = tonumber(ARGV[2])

for i = 4, #ARGV, 2 do
  local current = redis.call('HGET', KEYS[1], ARGV[i])
  if current and current ~= ARGV[i + 1] then
    local seen = redis.call('ZSCORE', KEYS[2], ARGV[i])
    if seen and tonumber(seen) >= liveAfter then
      return {'conflict', ARGV[i], current}
    end
  end
end

local changed = 0
for _, name in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. liveAfter)) do
  redis.call('HDEL', KEYS[1], name)
  redis.call('ZREM', KEYS[2], name)
  changed = 1
end
for i = 4, #ARGV, 2 do
  local current = redis.call('HGET', KEYS[1], ARGV[i])
  if current ~= ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    changed = 1
  end
  redis.call('ZADD', KEYS[2], now, ARGV[i])
end
if changed == 1 then
  redis.call('PUBLISH', ARGV[3], '1')
end
return {'ok', changed}
