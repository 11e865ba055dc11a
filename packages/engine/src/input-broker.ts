// Server-to-client requests of a running tool (elicitation/create, sampling/createMessage): the worker asks, the
// request waits in Redis for the client, and the client's response — POSTed to any api replica — is routed back
// to the waiting worker through Redis (docs/protocol.md: the reply may arrive at any replica).
import { randomUUID } from 'node:crypto';
import {
  isPlainObject,
  LocalError,
  LocalErrorCode,
  relatedTaskMeta,
  TaskKind,
  TaskStatus,
  type JsonRpcErrorObject,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import type { SessionEvents } from './session-events.ts';
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';
import { Reply } from './script-replies.ts';
import { RedisScripts } from './scripts.ts';
import type { Subscriber } from './subscriber.ts';
import type { TaskStore, TransitionResult } from './records/store.ts';

export const INPUT_REQUEST_ID_PREFIX = 'mcpt-';

export interface AskOptions {
  signal: AbortSignal;
  /** Give up after this long without an answer (also bounded by the task's ttl). */
  timeoutMs: number;
  /** Re-read the answer this often besides the pub/sub wake-up. */
  recheckMs: number;
  /** The statusMessage once the answer is in. */
  resumeMessage: string;
  /** Add the related-task `_meta` (default); tasks/result and friends must not carry it (T-META-2). */
  relatedTask?: boolean;
  /** The attempt of the task's job that asks: once a later one has started, this one's requests no longer count. */
  attempt?: number;
  /**
   * The tool's name for the request. The 2026-07-28 wire keys input requests by name (MRTR `inputRequests`, the
   * tasks extension's); without one, the request's id is its key. The tool keeps names unique for the task's life.
   */
  key?: string;
}

export type InputAnswer = { result: Record<string, unknown> } | { error: JsonRpcErrorObject };

export type AnswerVerdict = 'accepted' | 'unknown' | 'already-answered';

export class InputBroker {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly store: TaskStore,
    private readonly events: SessionEvents,
    private readonly subscriber: Subscriber,
    /** Wakes a task parked on one of its requests once the answer is in (TaskSignals.wake; docs/durable-execution.md). */
    private readonly wake?: (taskId: string, queue: string) => Promise<void>,
  ) {
    this.#scripts = RedisScripts.on(redis);
  }

  /**
   * Sends `method` to the task's client and resolves with its result. The task is `input_required` while any of
   * its requests is outstanding (T-INPUT-1, T-INPUT-4); the request carries the related-task `_meta` (T-INPUT-2).
   */
  async ask(
    task: TaskRecord,
    method: string,
    params: Record<string, unknown>,
    options: AskOptions,
  ): Promise<Record<string, unknown>> {
    const requestId = newRequestId();
    const message = requestMessage(task, requestId, method, params, options.relatedTask !== false);
    const requestKey = this.keys.inputRequest(requestId);
    const deadline = Math.min(Date.now() + options.timeoutMs, task.createdAt + task.ttl);
    await this.#registerRequest(task, requestId, method, deadline)
      .hset(
        this.keys.sessionInputs(task.sessionId),
        requestId,
        JSON.stringify({ taskId: task.taskId, message, ...(options.key !== undefined ? { key: options.key } : {}) }),
      )
      .pexpire(this.keys.sessionInputs(task.sessionId), this.store.streams.idleMs)
      .exec();
    const waiter = await this.subscriber.waiter(this.keys.inputChannel(requestId));
    const { attempt } = options;
    let answered = false;
    try {
      const moved = await this.store.transition(task, TaskStatus.InputRequired, {
        statusMessage: `Waiting for the client to answer ${method}.`,
        input: { requestId, delta: 1 },
        ...(attempt !== undefined ? { attempt } : {}),
      });
      if (!moved.ok) {
        throw moved.reason === 'stale'
          ? new LocalError(LocalErrorCode.AttemptSuperseded, `A later attempt (${moved.attempt}) runs the task now`, {
              taskId: task.taskId,
              attempt: moved.attempt,
            })
          : new LocalError(LocalErrorCode.TaskEnded, `The task is no longer running (${moved.reason})`, {
              taskId: task.taskId,
            });
      }
      await this.events.append(task.sessionId, task.taskId, message);
      for (;;) {
        const raw = await this.redis.hget(requestKey, 'response');
        if (raw) {
          answered = true;
          return unwrap(JSON.parse(raw) as InputAnswer, method);
        }
        options.signal.throwIfAborted();
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new LocalError(
            LocalErrorCode.InputTimeout,
            `The client did not answer ${method} within ${options.timeoutMs} ms`,
            {
              taskId: task.taskId,
              requestId,
            },
          );
        }
        await waiter.next(Math.min(left, options.recheckMs), options.signal);
      }
    } finally {
      await waiter.close();
      const removed = await this.redis
        .multi()
        .del(requestKey)
        .hdel(this.keys.sessionInputs(task.sessionId), requestId)
        .exec();
      // Tell the client the question is void (the task ended, or the wait timed out), so it can close the prompt;
      // unless a later attempt withdrew it already (and told the client).
      if (!answered && removed?.[0]?.[1] === 1) {
        const reason = options.signal.aborted ? 'The task no longer needs the answer.' : 'No answer came in time.';
        await this.events
          .append(task.sessionId, task.taskId, cancelledNotice(requestId, reason))
          .catch(() => undefined);
      }
      // Back to working once no request is outstanding; a cancelled or settled task stays as it is.
      await this.store.transition(task, TaskStatus.Working, {
        statusMessage: answered ? options.resumeMessage : `${options.resumeMessage} (an input request was abandoned)`,
        input: { requestId, delta: -1 },
        ...(attempt !== undefined ? { attempt } : {}),
      });
    }
  }

  /**
   * Sends `method` to the task's client for a tool that parks until the answer (docs/durable-execution.md, "Waiting
   * for the client"): the request is registered as `ask` registers it, marked parked with the queue of the task's
   * job (which the answer wakes: `answer`), and the task moves to input_required; nothing waits for the answer here.
   * The request is not among those a new attempt withdraws (T-INPUT-4 is about requests whose waiter is gone: this
   * one's waiter is the task's record). Answers the request's id and until when it may be answered.
   */
  async park(
    task: TaskRecord,
    method: string,
    params: Record<string, unknown>,
    options: { timeoutMs: number; attempt: number; queue: string; key?: string },
  ): Promise<{ requestId: string; until: number }> {
    const requestId = newRequestId();
    const message = requestMessage(task, requestId, method, params, true);
    const until = Math.min(Date.now() + options.timeoutMs, task.createdAt + task.ttl);
    await this.#registerRequest(task, requestId, method, until)
      .hset(this.keys.inputRequest(requestId), 'parked', options.queue)
      .hset(
        this.keys.sessionInputs(task.sessionId),
        requestId,
        JSON.stringify({ taskId: task.taskId, message, ...(options.key !== undefined ? { key: options.key } : {}) }),
      )
      .pexpire(this.keys.sessionInputs(task.sessionId), this.store.streams.idleMs)
      .exec();
    const moved = await this.store.transition(task, TaskStatus.InputRequired, {
      statusMessage: `Waiting for the client to answer ${method}.`,
      from: [TaskStatus.Working],
      attempt: options.attempt,
    });
    if (!moved.ok && (moved.reason !== 'rejected' || moved.current !== TaskStatus.InputRequired)) {
      await this.redis
        .multi()
        .del(this.keys.inputRequest(requestId))
        .hdel(this.keys.sessionInputs(task.sessionId), requestId)
        .exec();
      throw moved.reason === 'stale'
        ? new LocalError(LocalErrorCode.AttemptSuperseded, `A later attempt (${moved.attempt}) runs the task now`, {
            taskId: task.taskId,
            attempt: moved.attempt,
          })
        : new LocalError(LocalErrorCode.TaskEnded, `The task is no longer running (${moved.reason})`, {
            taskId: task.taskId,
          });
    }
    await this.events.append(task.sessionId, task.taskId, message);
    return { requestId, until };
  }

  /** Tells the client that a parked request is void (notifications/cancelled): its time passed, or its task ended. */
  async abandoned(task: TaskRecord, requestId: string, reason = 'No answer came in time.'): Promise<void> {
    await this.events.append(task.sessionId, task.taskId, cancelledNotice(requestId, reason));
  }

  /** The task's requests waiting for its client (operators' view): their ids, methods and params, oldest first. */
  async pending(task: TaskRecord): Promise<{ requestId: string; method: string; params: unknown }[]> {
    const ids = (await this.store.pendingInputIds(task.taskId)).sort();
    if (ids.length === 0) return [];
    const stored = await this.redis.hmget(this.keys.sessionInputs(task.sessionId), ...ids);
    return ids.flatMap((requestId, i) => {
      const raw = stored[i];
      // Withdrawn or answered already: the record's count catches up with its next transition.
      if (!raw) return [];
      const { message } = JSON.parse(raw) as { message: { method: string; params?: unknown } };
      return [{ requestId, method: message.method, params: message.params ?? {} }];
    });
  }

  /**
   * Starts `attempt` of the task's job (TaskStore.beginAttempt): the requests an earlier attempt left waiting for
   * the client are withdrawn, the client is told with notifications/cancelled, and an answer to one of them is
   * refused as for an unknown request (T-INPUT-4).
   */
  beginAttempt(
    task: TaskRecord,
    attempt: number,
    statusMessage: string,
    /** The attempt's worker and start, for its history entry. */
    run?: { worker: string; startedAt?: number },
  ): Promise<TransitionResult> {
    return this.store.beginAttempt(
      task,
      attempt,
      statusMessage,
      (requestId) => cancelledNotice(requestId, 'The task was restarted: this request no longer applies.'),
      run,
    );
  }

  /**
   * Sends `method` to the task's client without waiting for the answer (a `tasks/cancel` of the client's own task
   * whose result nobody needs any more). The client's answer is accepted for `answerTtlMs`, and dropped.
   */
  async tell(task: TaskRecord, method: string, params: Record<string, unknown>, answerTtlMs = 60_000): Promise<void> {
    const requestId = newRequestId();
    await this.#registerRequest(task, requestId, method, Date.now() + answerTtlMs).exec();
    await this.events.append(task.sessionId, task.taskId, { jsonrpc: '2.0', id: requestId, method, params });
  }

  /**
   * A MULTI that records who may answer `requestId` until `expiresAt` (what `answer` checks); the caller adds to it
   * and runs it.
   */
  #registerRequest(task: TaskRecord, requestId: string, method: string, expiresAt: number) {
    const requestKey = this.keys.inputRequest(requestId);
    return this.redis
      .multi()
      .hset(requestKey, { taskId: task.taskId, sessionId: task.sessionId, owner: task.owner, method })
      .pexpireat(requestKey, expiresAt);
  }

  /**
   * Routes a client's JSON-RPC response to the worker waiting for it. Only the session (or owner) the request was
   * sent to may answer it; anything else is `unknown` and changes nothing.
   */
  async answer(
    session: { sessionId: string; owner: string },
    id: string | number,
    answer: InputAnswer,
  ): Promise<AnswerVerdict> {
    if (typeof id !== 'string' || !id.startsWith(INPUT_REQUEST_ID_PREFIX)) return 'unknown';
    const { verdict, parked } = await this.#scripts.answerInput({
      keys: { request: this.keys.inputRequest(id) },
      sessionId: session.sessionId,
      owner: session.owner,
      answer: JSON.stringify(answer),
      channel: this.keys.inputChannel(id),
    });
    // No worker waits for a parked request: its task's job is woken, and its next attempt takes the answer.
    if (verdict === Reply.ACCEPTED && parked && this.wake) await this.wake(parked.taskId, parked.queue);
    if (verdict === Reply.ANSWERED) return 'already-answered';
    return verdict;
  }
}

/** notifications/cancelled for a request we gave up on: the client may drop it (no answer expected). */
function cancelledNotice(requestId: string, reason: string): Record<string, unknown> {
  return { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } };
}

/** The JSON-RPC request of an input request, with the related-task `_meta` unless `related` is false (T-META-2). */
function requestMessage(
  task: TaskRecord,
  requestId: string,
  method: string,
  params: Record<string, unknown>,
  related: boolean,
): Record<string, unknown> {
  const meta = {
    ...(isPlainObject(params['_meta']) ? params['_meta'] : {}),
    ...(task.kind === TaskKind.Task && related ? relatedTaskMeta(task.taskId) : {}),
  };
  const { _meta: _given, ...rest } = params;
  return {
    jsonrpc: '2.0',
    id: requestId,
    method,
    params: Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest,
  };
}

function newRequestId(): string {
  return `${INPUT_REQUEST_ID_PREFIX}${randomUUID()}`;
}

function unwrap(answer: InputAnswer, method: string): Record<string, unknown> {
  if ('result' in answer) return answer.result;
  throw new LocalError(
    LocalErrorCode.InputError,
    `The client answered ${method} with error ${answer.error.code}: ${answer.error.message}`,
    {
      error: answer.error,
    },
  );
}
