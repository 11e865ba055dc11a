--[[
  Claims up to `limit` members of a sorted set that are due at `now` for one caller, each under a lease. A claimed
  member is not removed: its score becomes the end of the claim's lease (`leaseEnd`), so other callers pass it over
  while this one works on it, and the caller's last step removes it or scores it anew. A caller that dies half way
  leaves its members to be claimed again once the lease ends. Used by the expiry sweep (the expiries set: the deletes
  are idempotent, so redoing them is harmless) and by the webhook delivery loops (the tasks with deliveries due:
  `leaseEnd`, which grows with every claim of a member, fences the claimer's settle-webhook-4.lua).

  KEYS[1] the sorted set, scored by when each member is due (epoch ms), or by the lease end once claimed

  ARGV[1] the arguments, JSON:
    now       epoch ms: members scored up to it are due
    limit     the most members to claim
    leaseEnd  the end of the claim's lease, epoch ms

  Returns the claimed members, the longest overdue first.
]]
local args = cjson.decode(ARGV[1])
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', args.now, 'LIMIT', 0, args.limit)
for _, member in ipairs(members) do
  redis.call('ZADD', KEYS[1], 'XX', args.leaseEnd, member)
end
return members
