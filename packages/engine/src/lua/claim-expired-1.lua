--[[
  Claims up to ARGV[2] expiry entries due at ARGV[1] for one sweeper. A claimed entry is not removed: its score
  becomes the end of the claim's lease (ARGV[3]), so other sweepers pass it over while this one deletes its task,
  and the deletion removes it. A sweeper that dies half way leaves its entries to be claimed again once the lease
  ends; the deletes are idempotent, so redoing them is harmless.

  KEYS[1] sorted set of expiry entries, scored by the task's expiry (epoch ms), or by the lease end once claimed

  ARGV[1] now, epoch ms: entries scored up to it are due
  ARGV[2] the most entries to claim
  ARGV[3] the end of the claim's lease, epoch ms

  Returns the claimed entries, the longest overdue first.
]]
local entries = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, entry in ipairs(entries) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], entry)
end
return entries
