--[[
  Included (`--- @include "open-request"`) by the scripts that open a request: touch-session-6.lua, and the scripts
  of the methods that open their request in their own step (create-task-6.lua, get-owned-1.lua). Fixed windows:
  each bucket key names its window (the caller puts the window number in it), so a bucket is a plain counter that
  expires.

  countRequest(k, a) counts the request against the rate limits shared by every api replica (T-SEC-3).
    KEYS[k .. k+3] buckets 1..4: the principal's requests, the client address's requests, the principal's failed
                   lookups, the address's failed lookups, in this window
    KEYS[k+4]      the hash of security counters (what operators monitor)
    ARGV[a]        window length, ms (bucket keys expire after two windows)
    ARGV[a+2i-1], ARGV[a+2i] for bucket i (1..4): its limit ("0": bucket unused) and its mode: "hit" counts this
                   request and refuses it when the count goes past the limit; "check" only refuses when the bucket
                   is already at its limit (the failed-lookup buckets, counted by record-failed-lookup-3.lua);
                   buckets 3 and 4 are read with one MGET when both are "check" buckets in use
    ARGV[a+9]      the security counter to increment when a "hit" bucket refuses (too many requests)
    ARGV[a+10]     the security counter to increment when a "check" bucket refuses (too many failed lookups)
    Returns the number (1..4) of the first bucket that refused the request, 0 when admitted.

  openKnownSession(k, a) restarts the idle timer of a session whose fields the caller holds (which is also the
  check that it still exists) and, when it exists, counts the request: -1 when there is no such session (nothing
  is counted), else what countRequest answers.
    KEYS[k]        the session hash; KEYS[k+1 .. k+5] as KEYS[k .. k+4] of countRequest
    ARGV[a]        the session's idle timeout, ms; ARGV[a+1 .. a+11] as ARGV[a .. a+10] of countRequest
]]
local function countRequest(k, a)
  local window = tonumber(ARGV[a])
  local refused = 0
  -- Buckets 3 and 4 (failed lookups) are "check" buckets: read together, in one command.
  local known = {}
  if tonumber(ARGV[a + 5]) > 0 and ARGV[a + 6] == 'check' and tonumber(ARGV[a + 7]) > 0 and ARGV[a + 8] == 'check' then
    local counts = redis.call('MGET', KEYS[k + 2], KEYS[k + 3])
    known[3] = counts[1]
    known[4] = counts[2]
  end
  for i = 1, 4 do
    local limit = tonumber(ARGV[a + 2 * i - 1])
    if limit > 0 then
      local count
      if ARGV[a + 2 * i] == 'hit' then
        count = redis.call('INCR', KEYS[k + i - 1])
        if count == 1 then
          redis.call('PEXPIRE', KEYS[k + i - 1], window * 2)
        end
        if count > limit and refused == 0 then
          refused = i
        end
      else
        local stored = known[i]
        if stored == nil then
          stored = redis.call('GET', KEYS[k + i - 1])
        end
        count = tonumber(stored or '0') or 0
        if count >= limit and refused == 0 then
          refused = i
        end
      end
    end
  end
  if refused > 0 then
    redis.call('HINCRBY', KEYS[k + 4], ARGV[a + 2 * refused] == 'hit' and ARGV[a + 9] or ARGV[a + 10], 1)
  end
  return refused
end

local function openKnownSession(k, a)
  if redis.call('PEXPIRE', KEYS[k], ARGV[a]) == 0 then
    return -1
  end
  return countRequest(k + 1, a + 1)
end
