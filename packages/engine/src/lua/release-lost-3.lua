--[[
  Releases the jobs of one tool queue whose holder is gone: a worker process whose every Redis connection has closed
  (killed, out of memory) holds its jobs' locks until they expire, and BullMQ's stalled-job check gives a job to
  another worker only after that (lost-jobs.ts; docs/reliability.md, "A worker dies"). A look that finds a job's
  holder without a connection files it as a suspect with the lock token it read; a later look (at least
  `confirmAfter`) that finds the same holder still gone and the same token on the lock releases it: the lock is
  deleted and the job put in BullMQ's stalled set, so that BullMQ's own stalled-job check, run at once by the caller,
  moves it back to wait as it does any stalled job (its stall count included). The token fences the release: a lock
  taken meanwhile by another worker (a new attempt) or renewed under another token is never touched.

  KEYS[1] hash: the queue's suspects, job id -> JSON {token, since = epoch ms of the look that filed it}
  KEYS[2] set: BullMQ's stalled set of the queue (jobs its next stalled-job check examines)
  KEYS[3] string: BullMQ's stalled-check key of the queue (while it exists, a stalled-job check does nothing)
  KEYS[4...] the lock key of each job in `jobs`, at the index its entry names

  ARGV[1] the arguments, JSON:
    now           epoch ms of this look
    confirmAfter  epoch ms: a suspect filed at or before it, still holding the same token, is released now
    keepMs        how long the suspects hash lives without a look (ms)
    jobs          the jobs whose holder had no connection at this look: {id, token = the lock's value read, key}

  Returns the ids of the jobs released (their locks deleted, in the stalled set, the stalled-check key deleted).
]]
local args = cjson.decode(ARGV[1])
local filed = {}
local flat = redis.call('HGETALL', KEYS[1])
for i = 1, #flat, 2 do
  filed[flat[i]] = cjson.decode(flat[i + 1])
end

local released = {}
local suspects = 0
local looked = {}
for _, job in ipairs(args.jobs) do
  looked[job.id] = true
  local before = filed[job.id]
  if redis.call('GET', KEYS[job.key]) ~= job.token then
    -- Taken again, renewed under another token, or finished: not this holder's any more.
    if before then
      redis.call('HDEL', KEYS[1], job.id)
    end
  elseif before and before.token == job.token and before.since <= args.confirmAfter then
    redis.call('DEL', KEYS[job.key])
    redis.call('SADD', KEYS[2], job.id)
    redis.call('HDEL', KEYS[1], job.id)
    released[#released + 1] = job.id
  else
    if not before or before.token ~= job.token then
      redis.call('HSET', KEYS[1], job.id, cjson.encode({token = job.token, since = args.now}))
    end
    suspects = suspects + 1
  end
end
-- A suspect this look did not find gone (its holder has a connection again, or the job moved on) is cleared.
for id in pairs(filed) do
  if not looked[id] then
    redis.call('HDEL', KEYS[1], id)
  end
end
if suspects > 0 then
  redis.call('PEXPIRE', KEYS[1], args.keepMs)
end
if #released > 0 then
  redis.call('DEL', KEYS[3])
end
return released
