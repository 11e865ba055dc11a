--[[
  Included (`--- @include "replies"`) by every script that answers a verdict: the names of the verdicts, the one
  return convention of our scripts. A script that decides something answers a table whose first element is one of
  these (a string: readable in MONITOR and redis-cli), then its details as its header says: `{Reply.STALE, attempt}`.
  What is not a verdict is answered as it is: data (a list of ids, a hash's fields, a count), a yes or no (1 or 0),
  an opening's outcome (0, -1 when the session is gone, or the number of the rate bucket that refused it: Opened in
  request-opening.ts). No script answers a string or a verdict code of its own.

  Reply is the same table on the TypeScript side (script-replies.ts, which scripts.ts reads the replies with);
  test/unit/lua-scripts.test.ts checks that the two agree and that each script's header names the verdicts it
  answers.
]]
local Reply = {
  -- Any write.
  OK = 'ok',
  -- The record (or request) is gone.
  MISSING = 'missing',
  -- The durable-write fence (include/durable-fence.lua) and the moves (transition-8.lua).
  ENDED = 'ended',
  STALE = 'stale',
  FULL = 'full',
  -- save-durable-3.lua.
  EXISTS = 'exists',
  OVER = 'over',
  -- The waits: park-wait-4.lua, take-input-4.lua, signal-task-4.lua.
  RESOLVED = 'resolved',
  PARKED = 'parked',
  TOO_MANY = 'too-many',
  WITHDRAWN = 'withdrawn',
  PENDING = 'pending',
  DELIVERED = 'delivered',
  KEPT = 'kept',
  -- transition-8.lua.
  UNCHANGED = 'unchanged',
  REJECTED = 'rejected',
  CHANGED = 'changed',
  WITHDRAW = 'withdraw',
  -- hand-out-2.lua, mark-external-1.lua.
  HANDED = 'handed',
  TERMINAL = 'terminal',
  -- publish-catalog-4.lua.
  CONFLICT = 'conflict',
  -- settle-webhook-4.lua.
  LOST = 'lost',
  -- create-task-6.lua and its includes (child-call, resume), create-session-6.lua.
  CREATED = 'created',
  OWNER_LIMIT = 'owner-limit',
  NOT_OPENED = 'not-opened',
  SAME_CALL = 'same-call',
  OTHER_CALL = 'other-call',
  PARENT_REFUSED = 'parent-refused',
  CHILDREN = 'children',
  RESUME_REFUSED = 'resume-refused',
  NOT_FAILED = 'not-failed',
  RESUMED = 'resumed',
  RATE_LIMITED = 'rate-limited',
  OWNER_CAP = 'owner-cap',
  ADDRESS_CAP = 'address-cap',
  -- answer-input-1.lua.
  ACCEPTED = 'accepted',
  ANSWERED = 'answered',
  UNKNOWN = 'unknown',
}
