--[[
  Claims the delivery of an input request for one kind of stream, so that the client gets the request on one
  stream only. The first kind to claim keeps it; the same kind may deliver again (a resumed GET stream, a new
  tasks/result call).

  KEYS[1] the input request hash (taskId, sessionId, owner, method[, response][, deliveredVia])

  ARGV[1] the arguments, JSON:
    via  the kind of stream claiming it: "get" or "result"

  Returns 1 when this kind holds the delivery, 0 when the other kind does or the request is gone (its answer
  was taken, or it was withdrawn).
]]
local args = cjson.decode(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSETNX', KEYS[1], 'deliveredVia', args.via)
if redis.call('HGET', KEYS[1], 'deliveredVia') == args.via then
  return 1
end
return 0
