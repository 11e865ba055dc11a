--[[
  Included (`--- @include "open-request"`) by the scripts that open a request: touch-session-6.lua, and the scripts
  of the methods that open their request in their own step (create-task-6.lua, get-owned-1.lua).

  An opening is a table (request-opening.ts openingArgs builds it); its keys are named by their KEYS index:
    session          the KEYS index of the session hash
    idleMs           the session's idle timeout, ms
    windowMs         rate-limit window length, ms (include/window-count.lua)
    buckets          four, in the order of RateScope: the principal's requests, the client address's requests, the
                     principal's failed lookups, the address's failed lookups, in this window; each a table:
                       key    its KEYS index
                       limit  0: the bucket is unused
                       mode   "hit" counts this request and refuses it when the count goes past the limit; "check"
                              only refuses when the bucket is already at its limit (the failed-lookup buckets,
                              counted by record-failed-lookup-3.lua); buckets 3 and 4 are read with one MGET when
                              both are "check" buckets in use
    counters         the KEYS index of the hash of security counters (what operators monitor)
    refusalCounters  the counters to increment when a bucket refuses: `hit` (too many requests) when a "hit" bucket
                     does, `check` (too many failed lookups) when a "check" bucket does

  countRequest(opening) counts the request against the rate limits shared by every api replica (T-SEC-3). Returns
  the number (1..4) of the first bucket that refused the request, 0 when admitted.

  openKnownSession(opening) restarts the idle timer of a session whose fields the caller holds (which is also the
  check that it still exists) and, when it exists, counts the request: -1 when there is no such session (nothing is
  counted), else what countRequest answers.
]]
--- @include "window-count"
local function countRequest(opening)
  local buckets = opening.buckets
  local refused = 0
  -- Buckets 3 and 4 (failed lookups) are "check" buckets: read together, in one command.
  local known = {}
  local principalLookups, addressLookups = buckets[3], buckets[4]
  if principalLookups.limit > 0 and principalLookups.mode == 'check' and addressLookups.limit > 0
      and addressLookups.mode == 'check' then
    local counts = redis.call('MGET', KEYS[principalLookups.key], KEYS[addressLookups.key])
    known[3] = counts[1]
    known[4] = counts[2]
  end
  for i, bucket in ipairs(buckets) do
    if bucket.limit > 0 then
      local over
      if bucket.mode == 'hit' then
        over = countInWindow(bucket.key, opening.windowMs) > bucket.limit
      else
        local stored = known[i]
        if stored == nil then
          stored = redis.call('GET', KEYS[bucket.key])
        end
        over = (tonumber(stored or '0') or 0) >= bucket.limit
      end
      if over and refused == 0 then
        refused = i
      end
    end
  end
  if refused > 0 then
    local counters = opening.refusalCounters
    redis.call('HINCRBY', KEYS[opening.counters], buckets[refused].mode == 'hit' and counters.hit or counters.check, 1)
  end
  return refused
end

local function openKnownSession(opening)
  if redis.call('PEXPIRE', KEYS[opening.session], opening.idleMs) == 0 then
    return -1
  end
  return countRequest(opening)
end
