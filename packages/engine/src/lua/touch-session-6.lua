--[[
  Opens a request: reads the session and restarts its idle timer, and — only when the session exists — counts the
  request against the rate limits shared by every api replica (T-SEC-3), in one round trip. A request for an
  unknown session counts nowhere, so made-up session ids cannot fill Redis with buckets.

  Fixed windows: each bucket key names its window (the caller puts the window number in it), so a bucket is a
  plain counter that expires.

  KEYS[1] the session hash
  KEYS[2] bucket 1: the principal's requests in this window
  KEYS[3] bucket 2: the client address's requests in this window
  KEYS[4] bucket 3: the principal's failed lookups in this window
  KEYS[5] bucket 4: the client address's failed lookups in this window
  KEYS[6] the hash of security counters (what operators monitor)

  ARGV[1] the session's idle timeout, ms
  ARGV[2] window length, ms (bucket keys expire after two windows)
  ARGV[1+2*i], ARGV[2+2*i] for bucket i (1..4): its limit ("0": bucket unused) and its mode: "hit" counts this
          request and refuses it when the count goes past the limit; "check" only refuses when the bucket is
          already at its limit (the failed-lookup buckets, counted by record-failure); buckets 3 and 4 (ARGV[7],
          ARGV[8], ARGV[9], ARGV[10]) are read with one MGET when both are "check" buckets in use
  ARGV[11] the security counter to increment when a "hit" bucket refuses (too many requests)
  ARGV[12] the security counter to increment when a "check" bucket refuses (too many failed lookups)
  ARGV[13] "1" when the caller holds the session's fields already (they never change): the session's existence is
           still checked here, by restarting its timer, but its fields are not read

  Returns {} when there is no such session, else {refused, field1, value1, ...}: the number (1..4) of the first
  bucket that refused, 0 when admitted, then the session's fields (none when ARGV[13] is "1").
]]
local session
if ARGV[13] == '1' then
  if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 0 then
    return {}
  end
  session = {}
else
  session = redis.call('HGETALL', KEYS[1])
  if #session == 0 then
    return {}
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
local window = tonumber(ARGV[2])
local refused = 0
-- Buckets 3 and 4 (failed lookups) are "check" buckets: read together, in one command.
local known = {}
if tonumber(ARGV[7]) > 0 and ARGV[8] == 'check' and tonumber(ARGV[9]) > 0 and ARGV[10] == 'check' then
  local counts = redis.call('MGET', KEYS[4], KEYS[5])
  known[3] = counts[1]
  known[4] = counts[2]
end
for i = 1, 4 do
  local limit = tonumber(ARGV[1 + 2 * i])
  if limit > 0 then
    local count
    if ARGV[2 + 2 * i] == 'hit' then
      count = redis.call('INCR', KEYS[1 + i])
      if count == 1 then
        redis.call('PEXPIRE', KEYS[1 + i], window * 2)
      end
      if count > limit and refused == 0 then
        refused = i
      end
    else
      local stored = known[i]
      if stored == nil then
        stored = redis.call('GET', KEYS[1 + i])
      end
      count = tonumber(stored or '0') or 0
      if count >= limit and refused == 0 then
        refused = i
      end
    end
  end
end
if refused > 0 then
  redis.call('HINCRBY', KEYS[6], ARGV[2 + 2 * refused] == 'hit' and ARGV[11] or ARGV[12], 1)
end
table.insert(session, 1, refused)
return session
