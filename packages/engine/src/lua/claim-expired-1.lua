--[[
  Claims up to `limit` expiry entries due at `now` for one sweeper. A claimed entry is not removed: its score
  becomes the end of the claim's lease (`leaseEnd`), so other sweepers pass it over while this one deletes its task,
  and the deletion removes it. A sweeper that dies half way leaves its entries to be claimed again once the lease
  ends; the deletes are idempotent, so redoing them is harmless.

  KEYS[1] sorted set of expiry entries, scored by the task's expiry (epoch ms), or by the lease end once claimed

  ARGV[1] the arguments, JSON:
    now       epoch ms: entries scored up to it are due
    limit     the most entries to claim
    leaseEnd  the end of the claim's lease, epoch ms

  Returns the claimed entries, the longest overdue first.
]]
local args = cjson.decode(ARGV[1])
local entries = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', args.now, 'LIMIT', 0, args.limit)
for _, entry in ipairs(entries) do
  redis.call('ZADD', KEYS[1], 'XX', args.leaseEnd, entry)
end
return entries
