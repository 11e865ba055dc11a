--[[
  Stores a client's answer to one of our input requests and wakes the waiting worker, in one step: checking the
  request and storing the answer separately let an answer land just after the worker had taken the first one and
  deleted the request, re-creating the key with no expiry and no owner (and reporting the duplicate as accepted).

  KEYS[1] the input request hash (taskId, sessionId, owner, method[, parked][, response])

  ARGV[1] the arguments, JSON:
    sessionId  the answering session's id
    owner      the answering session's owner
    answer     the answer (JSON)
    channel    the channel the waiting worker listens on

  Returns {"accepted"} when accepted, {"unknown"} when there is no such request for this session or owner,
  {"answered"} when it was answered already; {"accepted", taskId, queue} when accepted for a request its tool parked
  on (docs/durable-execution.md, "Waiting for the client"): no worker listens, and the caller wakes the task's job in
  `queue`.
]]
--- @include "replies"
local args = cjson.decode(ARGV[1])
local found = redis.call('HMGET', KEYS[1], 'sessionId', 'owner')
local sessionId, owner = found[1], found[2]
if not sessionId or (sessionId ~= args.sessionId and owner ~= args.owner) then
  return {Reply.UNKNOWN}
end
if redis.call('HSETNX', KEYS[1], 'response', args.answer) == 0 then
  return {Reply.ANSWERED}
end
redis.call('PUBLISH', args.channel, '1')
local parked = redis.call('HMGET', KEYS[1], 'taskId', 'parked')
if parked[2] then
  return {Reply.ACCEPTED, parked[1], parked[2]}
end
return {Reply.ACCEPTED}
