--[[
  Fixed-window rate limits shared by every api replica, checked and counted in one round trip. Each bucket key
  names its window (the caller puts the window number in it), so a bucket is a plain counter that expires.

  KEYS[1..4] bucket counters; KEYS[5] the hash of security counters (what operators monitor)

  ARGV[1] window length, ms (bucket keys expire after two windows)
  ARGV[2*i], ARGV[2*i+1] for bucket i (1..4): its limit ("0": bucket unused) and its mode: "hit" counts this
          request and refuses it when the count goes past the limit; "check" only refuses when the bucket is
          already at its limit (the failed-lookup buckets, counted by record-failure)
  ARGV[10] the security counter to increment when a "hit" bucket refuses (too many requests)
  ARGV[11] the security counter to increment when a "check" bucket refuses (too many failed lookups)

  Returns 0 when admitted, else the number (1..4) of the first bucket that refused.
]]
local window = tonumber(ARGV[1])
local refused = 0
for i = 1, 4 do
  local limit = tonumber(ARGV[2 * i])
  if limit > 0 then
    local count
    if ARGV[2 * i + 1] == 'hit' then
      count = redis.call('INCR', KEYS[i])
      if count == 1 then
        redis.call('PEXPIRE', KEYS[i], window * 2)
      end
      if count > limit and refused == 0 then
        refused = i
      end
    else
      count = tonumber(redis.call('GET', KEYS[i]) or '0')
      if count >= limit and refused == 0 then
        refused = i
      end
    end
  end
end
if refused > 0 then
  redis.call('HINCRBY', KEYS[5], ARGV[2 * refused + 1] == 'hit' and ARGV[10] or ARGV[11], 1)
end
return refused
