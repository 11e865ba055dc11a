// "Await a task": the one wait of every request answered with a task's end, whichever wire asked (tasks/result and
// a plain call on 2025-11-25, a synchronous call on 2026-07-28, the task_result handle tool). It opens its waiter
// before the read that registers this replica as the task's waiter (so that no change slips between the read and
// the wait), stops on the conditions the request names, forwards progress, hands a long call out as a task handle,
// and stops the work of a plain call whose client went away. What it returns is for the wire to render.
import { isTerminal, TaskStatus, type InputRequest, type JsonRpcId, type TaskRecord } from '@mcp-tasks/protocol';
import type { Waiter } from '@mcp-tasks/engine';
import type { ApiServices } from '../context.ts';
import { outstandingInputs } from './inputs.ts';

/** How a request awaits its task. */
export interface AwaitHow {
  /** Aborts when the client goes away: the wait ends (RequestCancelledError), and a plain call's work with it. */
  signal: AbortSignal;
  /** Reads the task (its owner's read, which registers this replica as its waiter). */
  read: () => Promise<TaskRecord>;
  /** The first read when it is not `read` (it opens the request, it logs): made once the waiter is open. */
  first?: () => Promise<TaskRecord>;
  /**
   * A waiter on the task's wake-ups the caller opened before the task could change (TaskService.createWatched opens
   * it before the record is written): used instead of one opened here, and closed here. Not with `progress`.
   */
  waiter?: Waiter;
  /**
   * A plain call (TaskKind.PlainToolCall) this request answers, as written: deleted once it ended (its answer is
   * the request's), stopped and deleted when the client goes away. `filed`: filed under `requestId` in its session
   * (by the step that created it: startCall's `filed`), an entry forgotten when it is handed out.
   */
  plainCall?: {
    record: TaskRecord;
    requestId: JsonRpcId;
    filed: boolean;
  };
  /** Stops besides the task's end (terminal). */
  stop?: {
    /** Once the task needs its client: at `input_required` with input requests outstanding (they are returned). */
    needsClient?: boolean;
    /** Once the task runs on without its client (`working`): handed over as a task (X-COMP-1). */
    handedOver?: boolean;
    /** Epoch ms: a plain call still running then is handed out as a task handle (calls/handles.ts). */
    handAt?: number;
    /** After this long, with the task as it is then. */
    withinMs?: number;
  };
  /**
   * Inline or stream: the task is awaited inline for `afterMs` (none: not at all) and answered on a stream of its
   * messages from `since` if it runs on or needs its client by then. `since` is the session-stream position the
   * stream starts at (asked once the task is known to run, ahead of the wait's reads).
   */
  stream?: { afterMs: number; since: (record: TaskRecord | undefined) => Promise<string> };
  /**
   * Progress forwarding: `forward` sends what the task's session stream holds after `cursor` (its progress) and
   * returns the new cursor; called before each read and once the task ended. `keepAlive`: the keep-alive progress
   * due while nothing else is sent (progress-keepalive.ts).
   */
  progress?: {
    sessionId: string;
    forward(sessionId: string, cursor: string): Promise<string>;
    keepAlive?: { dueIn(): number; send(): void };
  };
  /** Wraps the wait while it blocks the request without a stream (a stream's slot held meanwhile). */
  hold?: <T>(wait: () => Promise<T>) => Promise<T>;
}

/** Why the wait stopped, with the task as it was then. */
export type AwaitOutcome =
  | { ended: TaskRecord }
  | { needsClient: TaskRecord; inputs: Record<string, InputRequest> }
  | { handedOver: TaskRecord }
  | { handedOut: TaskRecord }
  | { stream: TaskRecord; since: string }
  | { waiting: TaskRecord };

export async function awaitTask(services: ApiServices, taskId: string, how: AwaitHow): Promise<AwaitOutcome> {
  // `how.signal` is read only once the wait begins: a request's signal may be made on first use (dear to make).
  const { stop = {}, stream, progress, plainCall } = how;
  let cursor = '0-0';
  const read = progress
    ? async () => {
        cursor = await progress.forward(progress.sessionId, cursor);
        return how.read();
      }
    : how.read;
  // Before the first read: a change between that read and the wait would otherwise be missed. The progress of a
  // task comes on its session's channel.
  const waiter =
    how.waiter ??
    (await services.subscriber.waiter(
      await services.tasks.wakeOn(taskId),
      ...(progress ? [services.store.keys.sessionChannel(progress.sessionId)] : []),
    ));
  const ended = async (record: TaskRecord): Promise<AwaitOutcome> => {
    if (progress) await progress.forward(progress.sessionId, cursor);
    // Deleted with its entry (filed as it was created): neither outlives the answer. (A call its read took is deleted
    // already: PlainCalls.take.)
    if (plainCall) await services.plainCalls.delete(record, plainCall.requestId);
    return { ended: record };
  };
  try {
    let current = how.first ? await how.first() : undefined;
    if (current && isTerminal(current.status)) return await ended(current);
    const since = stream?.since(current);
    since?.catch(() => undefined); // awaited only if the answer streams
    const now = Date.now();
    const streamAt = stream ? now + stream.afterMs : undefined;
    const withinAt = stop.withinMs !== undefined ? now + stop.withinMs : undefined;
    let handAt = stop.handAt;
    let stopped: 'needs-client' | 'handed-over' | 'stream' | undefined;
    let inputs: Record<string, InputRequest> = {};
    const until = async (record: TaskRecord): Promise<boolean> => {
      stopped = await stopOf(record);
      return stopped !== undefined;
    };
    const stopOf = async (record: TaskRecord): Promise<typeof stopped> => {
      if (stop.handedOver && record.status === TaskStatus.Working) return 'handed-over';
      if (record.status !== TaskStatus.InputRequired) return undefined;
      // A stream carries what the task asks: it is the answer from then on.
      if (stream) return 'stream';
      if (!stop.needsClient) return undefined;
      inputs = await outstandingInputs(services, record);
      return Object.keys(inputs).length > 0 ? 'needs-client' : undefined;
    };
    const wait = async (): Promise<TaskRecord> => {
      let given = current;
      for (;;) {
        const at = Math.min(streamAt ?? Infinity, withinAt ?? Infinity, handAt ?? Infinity);
        const withinMs = Math.min(at - Date.now(), progress?.keepAlive?.dueIn() ?? Infinity);
        const record = await services.tasks.waitFor(taskId, {
          signal: how.signal,
          read,
          until,
          waiter,
          ...(given ? { first: given } : {}),
          ...(withinMs !== Infinity ? { withinMs: Math.max(0, withinMs) } : {}),
        });
        given = undefined;
        if (isTerminal(record.status) || stopped) return record;
        if (progress?.keepAlive?.dueIn() === 0) progress.keepAlive.send();
        if (Date.now() >= at) return record;
      }
    };
    // An answer that may stream with no inline window streams at once, unread.
    let skip = stream !== undefined && stream.afterMs <= 0;
    for (;;) {
      if (!skip) current = await (how.hold ? how.hold(wait) : wait());
      skip = false;
      const live = current ?? plainCall?.record;
      if (!live) throw new Error('awaitTask: nothing read and no plain call given');
      if (isTerminal(live.status)) return await ended(live);
      if (stopped === 'handed-over') return { handedOver: live };
      if (stopped === 'needs-client') return { needsClient: live, inputs };
      if (plainCall && handAt !== undefined && Date.now() >= handAt) {
        const handed = await services.plainCalls.handOut(live, plainCall.filed ? plainCall.requestId : undefined);
        if (handed) return { handedOut: handed };
        // It ended first (its end is the answer) or is gone (the next read says so): wait for that, without deadline.
        handAt = undefined;
        stopped = undefined;
        current = undefined;
        continue;
      }
      if (stream && since) return { stream: live, since: await since };
      return { waiting: live };
    }
  } catch (error) {
    // The client went away: stop the work it no longer waits for.
    if (plainCall && how.signal.aborted) {
      await services.plainCalls.abandon(plainCall.record, plainCall.requestId, 'The client closed the request.');
    }
    throw error;
  } finally {
    await waiter.close();
  }
}
