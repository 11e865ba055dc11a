--[[
  Takes the client's answer to an input request a tool parked on (docs/durable-execution.md, "Waiting for the
  client"): the answer becomes the wait's outcome in the task's durable hash, so that every later attempt replays it
  from there, and the request is deleted (a second answer is then refused as for an unknown request). A request whose
  time has passed unanswered is withdrawn the same way, with a timeout as the outcome. Fenced as the other durable
  writes are (include/durable-fence.lua).

  KEYS[1] the task record hash
  KEYS[2] the task's durable hash
  KEYS[3] the input request hash (taskId, sessionId, owner, method[, response])
  KEYS[4] the session's hash of input requests waiting for its client

  ARGV[1] the arguments, JSON:
    attempt    the attempt taking the answer
    field      the wait's field in the durable hash (`w:<key>`)
    requestId  the request's id
    until      epoch ms: when the wait times out
    now        epoch ms

  Returns {"resolved", value} when the wait has its outcome (value: the JSON stored, `{"outcome":{"answer":...}}`
  or `{"outcome":{"timedOut":true}}`; {"withdrawn", value} when this call timed it out and withdrew the request (the
  caller tells the client); {"pending"} when no answer came yet and there is time left; {"missing"}, {"ended",
  status}, {"stale", latestAttempt} as save-durable-3.lua.
]]
--- @include "replies"
--- @include "durable-fence"
local args = cjson.decode(ARGV[1])
local refusal, f = durableFence(1, args.attempt, 'createdAt', 'ttl')
if refusal then
  return refusal
end
local stored = redis.call('HGET', KEYS[2], args.field)
if stored and string.sub(stored, 1, 11) == '{"outcome":' then
  return {Reply.RESOLVED, stored}
end
local function settle(outcome, verdict)
  local value = '{"outcome":' .. outcome .. '}'
  redis.call('HSET', KEYS[2], args.field, value)
  redis.call('PEXPIREAT', KEYS[2], tonumber(f[3]) + tonumber(f[4]))
  redis.call('DEL', KEYS[3])
  redis.call('HDEL', KEYS[4], args.requestId)
  return {verdict, value}
end
local response = redis.call('HGET', KEYS[3], 'response')
if response then
  return settle('{"answer":' .. response .. '}', Reply.RESOLVED)
end
if args['until'] <= args.now then
  return settle('{"timedOut":true}', Reply.WITHDRAWN)
end
return {Reply.PENDING}
