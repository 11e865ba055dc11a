--[[
  Reads a task record only for its owner. Another owner's task answers exactly like a missing one, with the same
  work on both paths (no record is sent over the wire), so neither the reply nor its timing tells them apart.

  KEYS[1] the task record hash

  ARGV[1] the owner asking

  Returns the record as HGETALL does, or an empty list when it is missing or belongs to someone else.
]]
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return {}
end
return redis.call('HGETALL', KEYS[1])
