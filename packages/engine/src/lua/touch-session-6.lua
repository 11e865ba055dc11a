--[[
  Opens a request: reads the session and restarts its idle timer, and — only when the session exists — counts the
  request against the rate limits shared by every api replica (T-SEC-3), in one round trip. A request for an
  unknown session counts nowhere, so made-up session ids cannot fill Redis with buckets. A method whose own script
  runs first thing can open its request in that step instead (include/open-request.lua).

  KEYS[1] the session hash
  KEYS[2] bucket 1: the principal's requests in this window
  KEYS[3] bucket 2: the client address's requests in this window
  KEYS[4] bucket 3: the principal's failed lookups in this window
  KEYS[5] bucket 4: the client address's failed lookups in this window
  KEYS[6] the hash of security counters (what operators monitor)

  ARGV[1] the arguments, JSON:
    open   the opening, its keys named by the indexes above (include/open-request.lua)
    known  true when the caller holds the session's fields already (they never change): the session's existence is
           still checked here, by restarting its timer, but its fields are not read

  Returns {} when there is no such session, else {refused, field1, value1, ...}: the number (1..4) of the first
  bucket that refused, 0 when admitted, then the session's fields (none when `known`).
]]
--- @include "open-request"
local args = cjson.decode(ARGV[1])
local open = args.open
local session
local refused
if args.known then
  refused = openKnownSession(open)
  if refused < 0 then
    return {}
  end
  session = {}
else
  session = redis.call('HGETALL', KEYS[open.session])
  if #session == 0 then
    return {}
  end
  redis.call('PEXPIRE', KEYS[open.session], open.idleMs)
  refused = countRequest(open)
end
table.insert(session, 1, refused)
return session
