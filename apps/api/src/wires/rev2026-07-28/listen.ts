// subscriptions/listen (C26-SUB-*): a long-lived SSE answer that opens with the acknowledgement of what the server
// honours, then carries `notifications/tools/list_changed` and, for the tasks extension, `notifications/tasks`
// with the full DetailedTask of each subscribed task (X-NTF-*). Both come from Redis (the catalog's channel, each
// task's channel), so a stream on any replica sees changes made through every replica (C26-SUB-7). The client ends
// a subscription by closing the stream; a replica that stops ends it with the listen result (C26-SUB-5).
import {
  isTerminal,
  modernDetailedTask,
  modernTaskNotification,
  ModernErrorCode,
  ModernMeta,
  ProtocolError,
  TASKS_EXTENSION,
  TaskNotFoundError,
  ErrorCode,
} from '@mcp-tasks/protocol';
import { noteFailedLookup } from '../../calls/admission.ts';
import { outstandingInputs } from '../../calls/inputs.ts';
import { findTask } from '../../calls/tasks.ts';
import { SseWriter } from '../../sse.ts';
import { callContextOf, declaresTasks, type ModernContext, type ModernReply } from './context.ts';
import { SERVER_INFO_META } from './tools.ts';

/** The most tasks one listen request may follow (each is a subscription and a read per change). */
export const MAX_LISTEN_TASKS = 100;

export const listen = {
  method: 'subscriptions/listen',
  handle: (params: Record<string, unknown> | undefined, context: ModernContext) => listenFor(params ?? {}, context),
};

/**
 * The ids the caller may read, each once. The others are silently left out of the ack (X-NTF-4), but each is a failed
 * lookup, counted as a `tasks/get` of an unknown id is (T-SEC-3); once the caller's budget is spent, the ids left are
 * not looked up, so a listen probes no more ids than as many `tasks/get` would.
 */
async function followable(context: ModernContext, taskIds: readonly string[]): Promise<string[]> {
  const followed: string[] = [];
  const call = callContextOf(context);
  for (const taskId of new Set(taskIds)) {
    const missed = await findTask(call, taskId).then(
      () => false,
      (error: unknown) => {
        if (error instanceof TaskNotFoundError) return true;
        throw error;
      },
    );
    if (!missed) followed.push(taskId);
    else if (await noteFailedLookup(context.services, call.caller, 'subscriptions/listen', taskId)) break;
  }
  return followed;
}

/** The stream of a listen request: its acknowledgement, then every change of what it follows until it ends. */
async function listenFor(params: Record<string, unknown>, context: ModernContext): Promise<ModernReply> {
  const { services, request, signal } = context;
  const wanted = params['notifications'];
  const notifications = typeof wanted === 'object' && wanted !== null ? (wanted as Record<string, unknown>) : {};
  const taskIds = notifications['taskIds'];
  if (taskIds !== undefined) {
    if (!declaresTasks(request.clientCapabilities)) {
      throw new ProtocolError(
        ModernErrorCode.MissingRequiredClientCapability,
        `notifications.taskIds needs the '${TASKS_EXTENSION}' extension declared in this request`,
        { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      );
    }
    if (
      !Array.isArray(taskIds) ||
      taskIds.length > MAX_LISTEN_TASKS ||
      !taskIds.every((id) => typeof id === 'string')
    ) {
      throw new ProtocolError(
        ErrorCode.InvalidParams,
        `notifications.taskIds must be an array of at most ${MAX_LISTEN_TASKS} task ids`,
      );
    }
  }
  const followed = await followable(context, taskIds ?? []);
  const toolsListChanged = notifications['toolsListChanged'] === true;
  const subscriptionId = request.id;
  const tag = { [ModernMeta.SubscriptionId]: subscriptionId };
  // Each followed task's changes come on this replica's channel once a read registered it (readTask watches).
  const waiter = await services.subscriber.waiter(
    ...(await Promise.all(followed.map((taskId) => services.tasks.wakeOn(taskId)))),
  );
  const sse = new SseWriter(context.res, services.config.SSE_KEEPALIVE_MS);
  const honoured: Record<string, unknown> = {};
  if (toolsListChanged) honoured['toolsListChanged'] = true;
  if (taskIds !== undefined) honoured['taskIds'] = followed;
  sse.send({
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { _meta: tag, notifications: honoured },
  });
  const stopListChanged = toolsListChanged
    ? services.tools.view.onChange(() => {
        if (!sse.closed)
          sse.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: tag } });
      })
    : () => undefined;
  const seen = new Map<string, string>();
  const open = new Set(followed);
  const ended = AbortSignal.any([signal, services.stopping]);
  try {
    // The current state of each task is sent first, then every change; a terminal task is dropped after its last.
    while (!sse.closed && !ended.aborted) {
      for (const taskId of [...open]) {
        const record = await findTask(callContextOf(context), taskId, { watch: true }).catch(() => undefined);
        if (!record) {
          open.delete(taskId);
          continue;
        }
        const detailed = modernDetailedTask(record, await outstandingInputs(services, record));
        const text = JSON.stringify(detailed);
        if (seen.get(taskId) !== text) {
          seen.set(taskId, text);
          sse.send(modernTaskNotification(detailed, subscriptionId));
        }
        if (isTerminal(record.status)) open.delete(taskId);
      }
      await waiter.next(services.config.RESULT_RECHECK_MS, ended);
    }
    // The server ends the subscription (this replica stops): the listen result says so before the stream closes.
    if (!sse.closed && !signal.aborted) {
      sse.send({
        jsonrpc: '2.0',
        id: request.id,
        result: { resultType: 'complete', _meta: { ...tag, ...SERVER_INFO_META } },
      });
    }
  } finally {
    stopListChanged();
    await waiter.close();
    sse.end();
  }
  return { streamed: true };
}
