--[[
  Creates a session after admitting it: its `initialize` is counted against the rate limits of its principal and
  its client address (fixed windows shared by every api replica, include/window-count.lua), then the principal and
  the address must each have fewer live sessions than their cap. A refused session leaves no trace but the counts.

  The caps' sets hold sessions scored by when they stop counting: a while after their idle expiry, pushed out as
  they are used (refresh-session-3.lua); DELETE removes the entry (SessionStore.delete). Entries past their score
  are dropped here, so a session that expired frees its slot without anyone sweeping.

  KEYS[1] the session hash
  KEYS[2] the principal's live sessions (sorted set); used when maxPerOwner is not 0
  KEYS[3] the address's live sessions (sorted set); used when maxPerAddress is not 0
  KEYS[4] the principal's initialize bucket of this window; used when principalLimit is not 0
  KEYS[5] the address's initialize bucket of this window; used when addressLimit is not 0
  KEYS[6] the hash of security counters

  ARGV[1] the arguments, JSON:
    sessionId        the session's id
    now              epoch ms
    idleMs           the session's idle timeout, ms
    countedUntil     when the new session stops counting unless used, epoch ms
    windowMs         rate-limit window length, ms
    principalLimit   initialize requests per window of the principal (0: not counted)
    addressLimit     initialize requests per window of the address (0: not counted)
    maxPerOwner      the most live sessions of the principal (0: no cap)
    maxPerAddress    the most live sessions of the address (0: no cap)
    refusalCounters  the security counters to increment: `rate` on a rate refusal, `cap` on a cap refusal
    fields           the hash's field/value pairs, flat

  Returns {"created"}; {"rate-limited", bucket} when the principal's (bucket 1) or the address's (bucket 2) rate
  limit refused it; {"owner-cap", count} or {"address-cap", count} when the principal's or the address's cap did
  (count: the live sessions it holds).
]]
--- @include "replies"
--- @include "window-count"
--- @include "expiry"
local args = cjson.decode(ARGV[1])

-- Both buckets count the initialize, whichever refuses it.
local refused = 0
if args.principalLimit > 0 and countInWindow(4, args.windowMs) > args.principalLimit then
  refused = 1
end
if args.addressLimit > 0 and countInWindow(5, args.windowMs) > args.addressLimit and refused == 0 then
  refused = 2
end
if refused > 0 then
  redis.call('HINCRBY', KEYS[6], args.refusalCounters.rate, 1)
  return {Reply.RATE_LIMITED, refused}
end

-- The live sessions KEYS[key] holds, when a cap of `max` is set (0 otherwise).
local function liveSessions(key, max)
  if max == 0 then
    return 0
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[key], '-inf', args.now)
  return redis.call('ZCARD', KEYS[key])
end
local ownerCount = liveSessions(2, args.maxPerOwner)
if args.maxPerOwner > 0 and ownerCount >= args.maxPerOwner then
  redis.call('HINCRBY', KEYS[6], args.refusalCounters.cap, 1)
  return {Reply.OWNER_CAP, ownerCount}
end
local addressCount = liveSessions(3, args.maxPerAddress)
if args.maxPerAddress > 0 and addressCount >= args.maxPerAddress then
  redis.call('HINCRBY', KEYS[6], args.refusalCounters.cap, 1)
  return {Reply.ADDRESS_CAP, addressCount}
end

-- Counted under each cap that is set; a set lives as long as its longest-counted session.
local function count(key, max)
  if max > 0 then
    redis.call('ZADD', KEYS[key], args.countedUntil, args.sessionId)
    expireNotBefore(key, args.countedUntil)
  end
end
count(2, args.maxPerOwner)
count(3, args.maxPerAddress)
redis.call('HSET', KEYS[1], unpack(args.fields))
redis.call('PEXPIRE', KEYS[1], args.idleMs)
return {Reply.CREATED}
