// The Redis key layout: every key of the runner is built here, but for a task record and its indexes, which only
// the records module names (records/keys.ts). All keys start with the prefix, so a prefix with a hash tag (e.g.
// "{mcpt}") keeps everything in one Redis Cluster slot.

export class KeySpace {
  constructor(readonly prefix: string) {
    if (prefix.includes(':') && !prefix.startsWith('{')) {
      throw new Error(`Key prefix '${prefix}' must not contain ':' (BullMQ uses it as a separator)`);
    }
  }

  /** Hash: an MCP session. */
  session(sessionId: string): string {
    return `${this.prefix}:session:${sessionId}`;
  }

  /**
   * Pub/sub channel of one api replica (`replicaChannel('')` is the prefix of all): the ids of the tasks it waits
   * for whose status changed (the transition script tells the replicas a task's record names as its waiters).
   */
  replicaChannel(replicaId: string): string {
    return `${this.prefix}:replica:${replicaId}`;
  }

  /** Pub/sub channel: commands to every worker (cancel). */
  controlChannel(): string {
    return `${this.prefix}:control`;
  }

  /** Stream: every message for one session's client (status, progress, input requests); SSE ids are its ids. */
  sessionEvents(sessionId: string): string {
    return `${this.prefix}:session:${sessionId}:events`;
  }

  /** Pub/sub channel: wakes the readers of one session's event stream. */
  sessionChannel(sessionId: string): string {
    return `${this.prefix}:session-events:${sessionId}`;
  }

  /** Hash: input requests waiting for the session's client, request id -> JSON-RPC request. */
  sessionInputs(sessionId: string): string {
    return `${this.prefix}:session:${sessionId}:inputs`;
  }

  /** Sorted set: tasks whose tasks/result stream is open now (score: lease expiry), so the GET stream skips them. */
  answerStreamLeases(sessionId: string): string {
    return `${this.prefix}:session:${sessionId}:result-streams`;
  }

  /** Hash: one server-to-client request (elicitation, sampling) and, once it came, the client's response. */
  inputRequest(requestId: string): string {
    return `${this.prefix}:input:${requestId}`;
  }

  /** Pub/sub channel: the response to one input request arrived. */
  inputChannel(requestId: string): string {
    return `${this.prefix}:input-answers:${requestId}`;
  }

  /** String: digest of the final report an external system posted for a task (single use; idempotent retries). */
  callbackFinal(taskId: string): string {
    return `${this.prefix}:callback-final:${taskId}`;
  }

  /** String: one external queue event handled (dedupes the listeners of several workers). */
  externalEventClaim(queue: string, eventId: string): string {
    return `${this.prefix}:ext-event:${queue}:${eventId}`;
  }

  /** String: the id of the last event of an external queue the listeners handled, where a restart resumes. */
  externalEventCursor(queue: string): string {
    return `${this.prefix}:ext-cursor:${queue}`;
  }

  /** Hash: JSON-RPC request id -> record id of the session's unanswered plain tools/calls (session-calls.ts). */
  sessionCalls(sessionId: string): string {
    return `${this.prefix}:session:${sessionId}:calls`;
  }

  /** Sorted set: a session's open SSE streams scored by lease expiry, for MAX_STREAMS_PER_SESSION. */
  sessionConnections(sessionId: string): string {
    return `${this.prefix}:session:${sessionId}:streams`;
  }

  /**
   * Sorted set: the live sessions of one principal, scored by when each stops counting (a while after its idle
   * expiry, see SessionStore), for MAX_SESSIONS_PER_PRINCIPAL.
   */
  ownerSessions(owner: string): string {
    return `${this.prefix}:owner-sessions:${owner}`;
  }

  /** Sorted set: the live sessions initialized from one client address, scored likewise, for MAX_SESSIONS_PER_ADDRESS. */
  addressSessions(address: string): string {
    return `${this.prefix}:address-sessions:${address}`;
  }

  /**
   * String: the HMAC key (`<generation>:<secret>`) that signs MRTR requestStates (2026-07-28) during one rotation
   * period (`period` = its number), shared by every api replica; it expires when its states may no longer be
   * verified (signing-keys.ts; the api's request-state signer).
   */
  requestStateKey(period: number): string {
    return `${this.prefix}:request-state-key:${period}`;
  }

  /** Counter: requests of one principal or client address in one rate-limit window (`window` = its number). */
  rateBucket(scope: string, subject: string, window: number): string {
    return `${this.prefix}:rate:${scope}:${window}:${subject}`;
  }

  /** Hash: counters of suspicious events across replicas (failed lookups, throttled requests, ...) for monitoring. */
  securityCounters(): string {
    return `${this.prefix}:security-counters`;
  }

  /** Hash: the tool catalog, tool name -> its published entry (canonical JSON; docs/catalog.md). */
  catalogTools(): string {
    return `${this.prefix}:catalog:tools`;
  }

  /** Sorted set: tool name scored by the last heartbeat (ms) of any worker serving it. */
  catalogSeen(): string {
    return `${this.prefix}:catalog:seen`;
  }

  /** Hash: tool name -> the worker that last published its catalog entry (named when an entry is refused at read). */
  catalogPublishers(): string {
    return `${this.prefix}:catalog:publishers`;
  }

  /** Hash: tool name -> JSON {worker instance: its last heartbeat (ms)}, the workers serving its catalog entry. */
  catalogServers(): string {
    return `${this.prefix}:catalog:servers`;
  }

  /** Pub/sub channel: the catalog changed (a tool arrived, changed or went away); api replicas reload it. */
  catalogChannel(): string {
    return `${this.prefix}:catalog-changed`;
  }

  /**
   * Hash: the dashboard's figures of one minute (`minute` = epoch ms / 60000): tasks created and finished by status,
   * latency histograms, queue depth, per-tool counts (activity.ts). Expires an hour after the minute.
   */
  activityMinute(minute: number): string {
    return `${this.prefix}:activity:${minute}`;
  }

  /** Sorted set: the principals with the most tasks `created` or `finished` in one minute, trimmed to a top list. */
  activityOwners(minute: number, measure: 'created' | 'finished'): string {
    return `${this.prefix}:activity:${minute}:owners:${measure}`;
  }

  /** Hash: principal -> the priority of its last job queued for the tool (create-task-6.lua; docs/scheduling.md). */
  fairQueue(tool: string): string {
    return `${this.prefix}:sched:fair:${tool}`;
  }

  /** Sorted set: a principal's runs over all tools, scored by lease expiry (MAX_RUNNING_PER_OWNER). */
  ownerRuns(owner: string): string {
    return `${this.prefix}:sched:runs:${owner}`;
  }

  /** Sorted set: a principal's runs of one tool, scored by lease expiry (the tool's maxRunningPerOwner). */
  ownerToolRuns(owner: string, tool: string): string {
    return `${this.prefix}:sched:runs:${owner}:tool:${tool}`;
  }

  /** Sorted set: a principal's jobs held back by its caps, scored by when they were first held. */
  ownerParked(owner: string): string {
    return `${this.prefix}:sched:parked:${owner}`;
  }

  /** Set: principals with jobs held back by their caps (the sweep's work list). */
  parkedOwners(): string {
    return `${this.prefix}:sched:parked-owners`;
  }

  /** Pub/sub channel: a webhook delivery was queued (transition-8.lua); it wakes the workers' delivery loops. */
  webhooksChannel(): string {
    return `${this.prefix}:webhooks-queued`;
  }

  /** Hash: webhook delivery attempts by outcome across workers (delivered, failed, abandoned, expired), for /metrics. */
  webhookCounters(): string {
    return `${this.prefix}:webhooks:counters`;
  }

  /** Hash: per tool counters for operators (`<tool>:retries`, `<tool>:timeouts`, `<tool>:parked`, ...). */
  schedulingCounters(): string {
    return `${this.prefix}:sched:counters`;
  }

  /**
   * String: the lease of the worker that looks for a tool queue's jobs held by gone workers this round (lost-jobs.ts;
   * docs/reliability.md, "A worker dies"): one look per queue per round, whatever the number of workers.
   */
  lostJobsLease(queue: string): string {
    return `${this.prefix}:lost-jobs:${queue}`;
  }

  /**
   * Hash: a tool queue's jobs whose holder had no Redis connection at the last look, job id -> JSON {token, since}:
   * a second look a while later with the same lock releases them (release-lost-4.lua).
   */
  lostJobsSuspects(queue: string): string {
    return `${this.prefix}:lost-jobs:${queue}:suspects`;
  }

  /**
   * Hash: the gateway's upstream MCP servers as each worker sees them, `<worker>/<upstream>` -> JSON (state, reason,
   * tools; docs/gateway.md), for `mcpt overview`, /readyz and the dashboard.
   */
  gatewayUpstreams(): string {
    return `${this.prefix}:gateway:upstreams`;
  }

  /** String: the worker that runs the calls of a stateful stdio upstream (its lease; docs/gateway.md, "Affinity"). */
  gatewayOwner(upstream: string): string {
    return `${this.prefix}:gateway:owner:${upstream}`;
  }

  /**
   * String: the Streamable HTTP session of an upstream that the calls of one principal or client session share,
   * across workers (`subject`: a digest, never the principal or session id itself).
   */
  gatewayAffinity(upstream: string, subject: string): string {
    return `${this.prefix}:gateway:affinity:${upstream}:${subject}`;
  }
}
