// The verdicts our Lua scripts answer, by name: the same table as lua/include/replies.lua, which every script that
// decides something includes. A verdict is the first element of the script's reply, its details follow (each script's
// header says which). test/unit/lua-scripts.test.ts checks that this table and the Lua one agree.

export const Reply = {
  // Any write.
  OK: 'ok',
  // The record (or request) is gone.
  MISSING: 'missing',
  // The durable-write fence (include/durable-fence.lua) and the moves (transition-8.lua).
  ENDED: 'ended',
  STALE: 'stale',
  FULL: 'full',
  // save-durable-3.lua.
  EXISTS: 'exists',
  OVER: 'over',
  // The waits: park-wait-4.lua, take-input-4.lua, signal-task-4.lua.
  RESOLVED: 'resolved',
  PARKED: 'parked',
  TOO_MANY: 'too-many',
  WITHDRAWN: 'withdrawn',
  PENDING: 'pending',
  DELIVERED: 'delivered',
  KEPT: 'kept',
  // transition-8.lua.
  UNCHANGED: 'unchanged',
  REJECTED: 'rejected',
  CHANGED: 'changed',
  WITHDRAW: 'withdraw',
  // hand-out-2.lua, mark-external-1.lua.
  HANDED: 'handed',
  TERMINAL: 'terminal',
  // publish-catalog-4.lua.
  CONFLICT: 'conflict',
  // settle-webhook-4.lua.
  LOST: 'lost',
  // create-task-6.lua and its includes (child-call, resume), create-session-6.lua.
  CREATED: 'created',
  OWNER_LIMIT: 'owner-limit',
  NOT_OPENED: 'not-opened',
  SAME_CALL: 'same-call',
  OTHER_CALL: 'other-call',
  PARENT_REFUSED: 'parent-refused',
  CHILDREN: 'children',
  RESUME_REFUSED: 'resume-refused',
  NOT_FAILED: 'not-failed',
  RESUMED: 'resumed',
  RATE_LIMITED: 'rate-limited',
  OWNER_CAP: 'owner-cap',
  ADDRESS_CAP: 'address-cap',
  // answer-input-1.lua.
  ACCEPTED: 'accepted',
  ANSWERED: 'answered',
  UNKNOWN: 'unknown',
} as const;

export type Reply = (typeof Reply)[keyof typeof Reply];
