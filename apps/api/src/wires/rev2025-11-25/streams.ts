// The two kinds of SSE stream: the answer stream of a long request (tasks/result, or a plain tools/call), which
// carries the task's notifications and input requests and ends with the answer; and the session's GET stream,
// which carries everything else. Both read the session's event stream in Redis, so any replica can serve them and
// a client resumes with Last-Event-ID wherever it reconnects.
import { randomUUID } from 'node:crypto';
import { audit, AuditEvent, type Session, type StreamEvent, type StreamMessage } from '@mcp-tasks/engine';
import {
  errorResponse,
  handleStartedResult,
  isTerminal,
  plainResultOf,
  ProtocolError,
  resultOf,
  successResponse,
  TaskKind,
  taskStatusNotification,
  type JsonRpcId,
  type JsonRpcResponse,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import type { ApiServices } from '../../context.ts';
import { ProgressKeepAlive } from '../../progress-keepalive.ts';
import { eventIdOf, type SseWriter } from '../../sse.ts';

export interface AnswerStream {
  taskId: string;
  taskKind: TaskKind;
  requestId: JsonRpcId;
  /** Resume after this stream id; absent for a new stream. */
  after?: string;
  /** A new stream: the task's session, when the caller has already read the task (saves reading it again). */
  sessionId?: string;
  /** A new stream: start after this session-stream id rather than at the stream's end. */
  since?: string;
}

/**
 * Streams one task's messages until it is terminal, then the request's answer. The answer stream of a plain call of a
 * client with task handles ends at its deadline with the handle instead (calls/handles.ts), and, when the call asked
 * for progress, carries keep-alive progress while its tool is quiet (progress-keepalive.ts).
 */
export async function streamAnswer(
  services: ApiServices,
  session: Session,
  spec: AnswerStream,
  sse: SseWriter,
  signal: AbortSignal,
): Promise<void> {
  // A task read through getOwned (owner checked, this replica named a waiter), by the caller before a new stream or
  // by the first read here for a resumed one, is read again with one HGETALL (TaskService.reread).
  let checked = spec.sessionId !== undefined && spec.taskKind === TaskKind.Task;
  const read = async () => {
    if (checked) return services.tasks.reread(spec.taskId, session.owner);
    const record = await readTask(services, session, spec);
    checked = spec.taskKind === TaskKind.Task;
    return record;
  };
  const sessionId = spec.sessionId ?? (await read()).sessionId;
  const lease = services.events.leaseAnswerStream(sessionId, spec.taskId, randomUUID());
  await lease.renew();
  const renewal = setInterval(() => void lease.renew().catch(() => undefined), 10_000);
  // The task's changes come on this replica's channel once a read registered it (readTask watches).
  const waiter = await services.subscriber.waiter(
    await services.tasks.wakeOn(spec.taskId),
    services.store.keys.sessionChannel(sessionId),
  );
  const id = (after: string) => eventIdOf({ kind: 'task', ...spec, after });
  try {
    let cursor = spec.after ?? spec.since ?? (await services.events.lastId(sessionId));
    const sentRequests = new Set<string>();
    if (spec.after === undefined) {
      // Requests queued before this stream opened are delivered here (T-INPUT-3).
      for (const pending of await services.events.pendingInputs(sessionId)) {
        if (pending.taskId !== spec.taskId) continue;
        if (!(await services.events.claimDelivery(pending.requestId, 'result'))) continue;
        sentRequests.add(pending.requestId);
        sse.send(pending.message, id(cursor));
      }
    }
    let call: PlainCallWait | undefined;
    const forwardTaskEvents = (from: string) =>
      forward(
        services,
        sessionId,
        from,
        sse,
        async (event) => {
          if (event.taskId !== spec.taskId) return undefined;
          const requestId = inputRequestId(event.message);
          if (requestId !== undefined) {
            if (sentRequests.has(requestId) || !(await services.events.claimDelivery(requestId, 'result')))
              return undefined;
            sentRequests.add(requestId);
          }
          return id(event.id);
        },
        (message) => call?.keepAlive?.forwarded(message) ?? message,
      );
    for (;;) {
      cursor = await forwardTaskEvents(cursor);
      const record = await read();
      if (spec.taskKind === TaskKind.PlainToolCall) {
        call ??= plainCallWait(services, session, record);
        // Handed out already (a stream resumed after its handle was sent): the handle is the answer again.
        const handed = record.kind === TaskKind.Task ? record : await handOutWhenDue(services, call, record, spec);
        if (handed) {
          const answer = handleStartedResult({ record: handed }, services.handles.names);
          sse.send(successResponse(spec.requestId, answer) as unknown as Record<string, unknown>, id(cursor));
          return;
        }
        if (call.keepAlive && call.keepAlive.dueIn() === 0) sse.send(call.keepAlive.next());
      }
      if (isTerminal(record.status)) {
        // The terminal status notification was appended with the status itself: send it before the answer.
        cursor = await forwardTaskEvents(cursor);
        sse.send(answerOf(record, spec.requestId) as unknown as Record<string, unknown>, id(cursor));
        if (record.kind === TaskKind.Task) {
          audit(services.security.audit, AuditEvent.ResultRetrieved, {
            principal: session.owner,
            taskId: record.taskId,
            tool: record.tool,
            requestId: spec.requestId,
            sessionId,
            status: record.status,
          });
        }
        if (record.kind === TaskKind.PlainToolCall) await services.plainCalls.delete(record, spec.requestId);
        return;
      }
      if (sse.closed || signal.aborted) return;
      await waiter.next(Math.min(services.config.RESULT_RECHECK_MS, call ? untilDue(call) : Infinity), signal);
    }
  } finally {
    clearInterval(renewal);
    await waiter.close();
    await lease.close().catch(() => undefined);
  }
}

/** What the answer stream of a plain call waits for besides its end: its handle deadline, its keep-alives. */
interface PlainCallWait {
  handAt?: number;
  keepAlive?: ProgressKeepAlive;
}

function plainCallWait(services: ApiServices, session: Session, record: TaskRecord): PlainCallWait {
  const { handles, config } = services;
  // The request began as the call's record was made: a stream resumed on any replica finds the same deadline.
  const handAt = handles.deadline(
    handles.offeredToSession(session),
    services.tools.view.entries().get(record.tool),
    record.createdAt,
  );
  const keepAlive =
    record.progressToken !== undefined && config.PROGRESS_KEEPALIVE_MS > 0
      ? new ProgressKeepAlive(record.progressToken, config.PROGRESS_KEEPALIVE_MS)
      : undefined;
  return { ...(handAt !== undefined ? { handAt } : {}), ...(keepAlive ? { keepAlive } : {}) };
}

/** A call still running at its deadline, handed out (as a task); undefined before it, or when it ended first. */
async function handOutWhenDue(
  services: ApiServices,
  call: PlainCallWait,
  record: TaskRecord,
  spec: AnswerStream,
): Promise<TaskRecord | undefined> {
  if (call.handAt === undefined || Date.now() < call.handAt || isTerminal(record.status)) return undefined;
  return services.plainCalls.handOut(record, spec.requestId);
}

/** How long the stream may sleep before its plain call needs it: the handle deadline, the next keep-alive. */
function untilDue(call: PlainCallWait): number {
  const now = Date.now();
  const handle = call.handAt !== undefined ? Math.max(0, call.handAt - now) : Infinity;
  return Math.min(handle, call.keepAlive?.dueIn(now) ?? Infinity);
}

/** The session's GET stream: every message of the session not taken by an open answer stream, until the client leaves. */
export async function streamSession(
  services: ApiServices,
  session: Session,
  after: string | undefined,
  sse: SseWriter,
  signal: AbortSignal,
): Promise<void> {
  const { sessionId } = session;
  const waiter = await services.subscriber.waiter(services.store.keys.sessionChannel(sessionId));
  const id = (position: string) => eventIdOf({ kind: 'session', after: position });
  // Sent by this replica to the streams it holds, without an event id: a client that reconnects lists the tools
  // again anyway, so there is nothing to replay.
  const stopListChanged = services.tools.view.onChange(() => {
    if (!sse.closed) sse.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  });
  try {
    let cursor = after ?? (await services.events.lastId(sessionId));
    // A request written between reading the cursor and the pending list is in both: send it once (as streamAnswer).
    const sentRequests = new Set<string>();
    if (after === undefined) {
      const taken = await services.events.tasksWithAnswerStreams(sessionId);
      for (const pending of await services.events.pendingInputs(sessionId)) {
        if (taken.has(pending.taskId) || !(await services.events.claimDelivery(pending.requestId, 'get'))) continue;
        sentRequests.add(pending.requestId);
        sse.send(pending.message, id(cursor));
      }
    }
    while (!sse.closed && !signal.aborted) {
      const taken = await services.events.tasksWithAnswerStreams(sessionId);
      cursor = await forward(services, sessionId, cursor, sse, async (event) => {
        if (event.taskId !== undefined && taken.has(event.taskId)) return undefined;
        const requestId = inputRequestId(event.message);
        if (requestId !== undefined) {
          if (sentRequests.has(requestId) || !(await services.events.claimDelivery(requestId, 'get'))) return undefined;
          sentRequests.add(requestId);
        }
        return id(event.id);
      });
      await waiter.next(services.config.RESULT_RECHECK_MS, signal);
      if (!(await services.sessions.get(sessionId))) return;
    }
  } finally {
    stopListChanged();
    await waiter.close();
  }
}

/** Sends the events after `cursor` that `eventId` gives an id to; returns the new cursor. */
async function forward(
  services: ApiServices,
  sessionId: string,
  cursor: string,
  sse: SseWriter,
  eventId: (event: StreamMessage) => Promise<string | undefined>,
  transform: (message: Record<string, unknown>) => Record<string, unknown> = (message) => message,
): Promise<string> {
  for (;;) {
    const events = await services.events.after(sessionId, cursor);
    for (const event of events) {
      const message = render(event);
      const id = await eventId(message);
      if (id !== undefined) sse.send(transform(message.message), id);
      cursor = event.id;
    }
    if (events.length < 200) return cursor;
  }
}

/** A session stream event as the client gets it: a status change is rendered as tasks/get renders the task. */
function render(event: StreamEvent): StreamMessage {
  if (!('status' in event)) return event;
  return { id: event.id, taskId: event.taskId, message: taskStatusNotification(event.status) };
}

async function readTask(services: ApiServices, session: Session, spec: AnswerStream): Promise<TaskRecord> {
  if (spec.taskKind === TaskKind.Task) return services.tasks.getOwned(spec.taskId, session.owner, { watch: true });
  return services.plainCalls.read(spec.taskId, session.owner);
}

function answerOf(record: TaskRecord, requestId: JsonRpcId): JsonRpcResponse {
  try {
    const result = record.kind === TaskKind.Task ? resultOf(record) : plainResultOf(record);
    return successResponse(requestId, result);
  } catch (error) {
    if (error instanceof ProtocolError) return errorResponse(requestId, error.toJSON());
    throw error;
  }
}

/** The id of a server-to-client request (elicitation, sampling) carried by a stream message, if it is one. */
function inputRequestId(message: Record<string, unknown>): string | undefined {
  const id = message['id'];
  return typeof id === 'string' && typeof message['method'] === 'string' ? id : undefined;
}
