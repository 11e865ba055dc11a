--[[
  Creates a session after admitting it: its `initialize` is counted against the rate limits of its principal and
  its client address (fixed windows shared by every api replica, as in touch-session-6.lua), then the principal and
  the address must each have fewer live sessions than their cap. A refused session leaves no trace but the counts.

  The caps' sets hold sessions scored by when they stop counting: a while after their idle expiry, pushed out as
  they are used (refresh-session-3.lua); DELETE removes the entry (SessionStore.delete). Entries past their score
  are dropped here, so a session that expired frees its slot without anyone sweeping.

  KEYS[1] the session hash
  KEYS[2] the principal's live sessions (sorted set); used when ARGV[9] is not '0'
  KEYS[3] the address's live sessions (sorted set); used when ARGV[10] is not '0'
  KEYS[4] the principal's initialize bucket of this window; used when ARGV[6] is not '0'
  KEYS[5] the address's initialize bucket of this window; used when ARGV[7] is not '0'
  KEYS[6] the hash of security counters

  ARGV[1] session id
  ARGV[2] now, epoch ms
  ARGV[3] the session's idle timeout, ms
  ARGV[4] when the new session stops counting unless used, epoch ms
  ARGV[5] rate-limit window length, ms (bucket keys expire after two windows)
  ARGV[6] initialize requests per window of the principal ('0': not counted)
  ARGV[7] initialize requests per window of the address ('0': not counted)
  ARGV[8] the security counter a rate refusal increments
  ARGV[9] the most live sessions of the principal ('0': no cap)
  ARGV[10] the most live sessions of the address ('0': no cap)
  ARGV[11] the security counter a cap refusal increments
  ARGV[12...] the hash's field/value pairs

  Returns {refused, count}: refused is 0 when created, 1 or 2 when the principal's or the address's rate limit
  refused it, 3 or 4 when the principal's or the address's cap did (count: the live sessions it holds).
]]
local refused = 0
for i = 1, 2 do
  local limit = tonumber(ARGV[5 + i])
  if limit > 0 then
    local count = redis.call('INCR', KEYS[3 + i])
    if count == 1 then
      redis.call('PEXPIRE', KEYS[3 + i], tonumber(ARGV[5]) * 2)
    end
    if count > limit and refused == 0 then
      refused = i
    end
  end
end
if refused > 0 then
  redis.call('HINCRBY', KEYS[6], ARGV[8], 1)
  return {refused, 0}
end
for i = 1, 2 do
  local max = tonumber(ARGV[8 + i])
  if max > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[1 + i], '-inf', ARGV[2])
    local count = redis.call('ZCARD', KEYS[1 + i])
    if count >= max then
      redis.call('HINCRBY', KEYS[6], ARGV[11], 1)
      return {2 + i, count}
    end
  end
end
for i = 1, 2 do
  if tonumber(ARGV[8 + i]) > 0 then
    redis.call('ZADD', KEYS[1 + i], ARGV[4], ARGV[1])
    -- The set lives as long as its longest-counted session.
    redis.call('PEXPIREAT', KEYS[1 + i], ARGV[4], 'GT')
    redis.call('PEXPIREAT', KEYS[1 + i], ARGV[4], 'NX')
  end
end
redis.call('HSET', KEYS[1], unpack(ARGV, 12))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {0, 0}
