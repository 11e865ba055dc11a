--[[
  A plain call's record read again by the request that waits for it, and, once the call has ended, deleted in the
  same step with its entry by request id: the woken request answers after one round trip instead of a read and then
  a delete (calls/plain-calls.ts). What is deleted is what TaskIndexes.deleteTasks deletes for one task (the record
  and the keys that expire with it, its index entries, its expiry entries; the two must stay alike), and the
  session's entry of the call.
  A record of another owner answers as a missing one; an unfinished call is only read.

  KEYS[1]  the record hash
  KEYS[2]  its input requests (set)
  KEYS[3]  its durable hash
  KEYS[4]  its children (set)
  KEYS[5]  its kept signals
  KEYS[6]  its webhook outbox
  KEYS[7]  its webhook attempts
  KEYS[8]  sorted set of live tasks
  KEYS[9]  sorted set of every task, by index member
  KEYS[10] the owner's task index
  KEYS[11] the owner's unfinished tasks
  KEYS[12] sorted set of expiries
  KEYS[13] the session's calls by request id (hash)
  KEYS[14...] the waiting sets of the three kinds of wait, each at the index `waiting` names

  ARGV[1] the arguments, JSON:
    owner    the owner the record must have
    taskId   the call's id
    member   its index member
    entries  its expiry entries (the forms TaskStore.delete removes)
    field    absent, or its field in the session's calls hash (its JSON-RPC request id as JSON)
    waiting  {sleep =, event =, input =}: the KEYS index of each kind's waiting set

  Returns {deleted, field1, value1, ...}: deleted is 1 when the call had ended and is deleted now, else 0; the
  fields are the record's as HGETALL has them (none when it is missing or someone else's).
]]
local args = cjson.decode(ARGV[1])
if redis.call('HGET', KEYS[1], 'owner') ~= args.owner then
  return {0}
end
local record = redis.call('HGETALL', KEYS[1])
local status
for i = 1, #record, 2 do
  if record[i] == 'status' then
    status = record[i + 1]
    break
  end
end
if status ~= 'completed' and status ~= 'failed' and status ~= 'cancelled' then
  table.insert(record, 1, 0)
  return record
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
redis.call('ZREM', KEYS[8], args.taskId)
redis.call('ZREM', KEYS[9], args.member)
redis.call('ZREM', KEYS[args.waiting.sleep], args.taskId)
redis.call('ZREM', KEYS[args.waiting.event], args.taskId)
redis.call('ZREM', KEYS[args.waiting.input], args.taskId)
redis.call('ZREM', KEYS[10], args.member)
redis.call('ZREM', KEYS[11], args.taskId)
if #args.entries > 0 then
  redis.call('ZREM', KEYS[12], unpack(args.entries))
end
if args.field then
  redis.call('HDEL', KEYS[13], args.field)
end
table.insert(record, 1, 1)
return record
