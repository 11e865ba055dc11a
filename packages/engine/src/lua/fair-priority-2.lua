--[[
  The BullMQ priority of a principal's new job for one tool, so that principals take turns (docs/scheduling.md,
  "Fairness"): a principal's k-th waiting job gets about k steps above the queue's head, so jobs of different
  principals interleave round robin whatever their backlogs. A principal's step is smaller when an operator gives it
  more weight.

  The hash keeps each principal's last priority and, under the field "\0v", the tool's virtual time: the highest
  (head priority - 1) seen, which only grows. Jobs whose script has run but whose add has not landed yet are not in
  the queue; the virtual time and the principals' last priorities do not depend on them, so parallel creates keep
  their order. It starts afresh when nothing waits and the virtual time passed half of BullMQ's range, and when the
  hash expires (the longest ttl of a task queued for the tool).

  KEYS[1] hash: principal -> the priority of its last job queued for the tool; "\0v" -> the virtual time
  KEYS[2] sorted set: the tool queue's waiting prioritized jobs (BullMQ's, score = priority * 2^32 + counter)

  ARGV[1] principal
  ARGV[2] its step (a whole number >= 1)
  ARGV[3] the largest priority BullMQ accepts
  ARGV[4] the new task's ttl, ms: the hash lives as long as the longest-lived task queued for the tool

  Returns the priority.
]]
local VTIME = '\0v'
local maxPriority = tonumber(ARGV[3])
local head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local vtime = tonumber(redis.call('HGET', KEYS[1], VTIME) or '0')
if #head == 0 then
  if vtime > maxPriority / 2 then
    redis.call('DEL', KEYS[1])
    vtime = 0
  end
else
  -- Jobs below the head's priority have started: a principal's earlier jobs that did count for nothing now.
  local started = math.floor(tonumber(head[2]) / 4294967296) - 1
  if started > vtime then vtime = started end
end
local base = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if vtime > base then base = vtime end
local priority = base + tonumber(ARGV[2])
-- A queue that has not drained for about a million rounds falls back to arrival order for the excess.
if priority > maxPriority then priority = maxPriority end
redis.call('HSET', KEYS[1], ARGV[1], priority, VTIME, vtime)
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return priority
