--[[
  Keeps in a task's record the attempts of its job under way (the field `runs`: JSON {"<attempt>": [startedAt,
  worker]}), while tracing is on. A worker killed mid-attempt never ends that attempt's span, so whoever comes next
  takes the attempts left unended and puts each in the task's trace: the job's next attempt as it starts, or the
  reconciler as it settles the task (docs/observability.md). Never creates a record.

  KEYS[1] the task record hash

  ARGV[1] the arguments, JSON:
    attempt  the attempt that starts or ends; absent: take every attempt left (the reconciler)
    start    present when `attempt` starts: {at = epoch ms, worker = the worker's name}; absent: `attempt` ended

  Returns the attempts taken (an attempt that starts takes those before it), flat: {attempt, startedAt, worker, ...};
  an empty list when the record does not exist.
]]
local args = cjson.decode(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {}
end
local raw = redis.call('HGET', KEYS[1], 'runs')
local runs = raw and cjson.decode(raw) or {}
local taken = {}
local kept = {}
local left = 0
for key, run in pairs(runs) do
  local attempt = tonumber(key)
  if args.attempt == nil or (args.start and attempt < args.attempt) then
    taken[#taken + 1] = attempt
    taken[#taken + 1] = run[1]
    taken[#taken + 1] = run[2]
  elseif args.start or attempt ~= args.attempt then
    kept[key] = run
    left = left + 1
  end
end
if args.start then
  kept[tostring(args.attempt)] = {args.start.at, args.start.worker}
  left = left + 1
end
if left > 0 then
  redis.call('HSET', KEYS[1], 'runs', cjson.encode(kept))
else
  redis.call('HDEL', KEYS[1], 'runs')
end
return taken
