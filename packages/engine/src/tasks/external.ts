// The Redis side of external work (docs/external-tools.md): marking a task as waiting on an external system,
// relaying the progress it reports, the single-use record of its final report, and forwarding a cancel to it.
import {
  isTerminal,
  relatedTaskMeta,
  TaskKind,
  TaskStatus,
  type ExternalRef,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import type { SessionEvents } from '../sessions/session-events.ts';
import type { KeySpace } from '../keys.ts';
import type { RedisClient } from '../redis.ts';
import type { MarkResult, TaskStore } from '../records/store.ts';

const CANCEL_FORWARD_TIMEOUT_MS = 2000;

export type FinalClaim = 'first' | 'same' | 'conflict';

export interface ExternalProgress {
  progress: number;
  total?: number;
  message?: string;
}

export class ExternalTasks {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly store: TaskStore,
    private readonly events: SessionEvents,
  ) {}

  /** Records where the task's work runs, if the task is still live (atomic with the status check). */
  mark(task: Pick<TaskRecord, 'taskId'>, ref: ExternalRef): Promise<MarkResult> {
    return this.store.markExternal(task, ref);
  }

  /** The task's external reference as stored now (also on a terminal record, until it expires). */
  refOf(taskId: string): Promise<ExternalRef | undefined> {
    return this.store.externalRef(taskId);
  }

  /**
   * Claims the one final report of a task: `first` for the first digest, `same` for a retry of it (the caller
   * settles again, harmlessly, in case the first attempt died before settling), `conflict` for a different report.
   * The claim lives as long as the token could (until `expiresAt`).
   */
  async claimFinal(taskId: string, digest: string, expiresAt: number): Promise<FinalClaim> {
    const key = this.keys.callbackFinal(taskId);
    const set = await this.redis.set(key, digest, 'PXAT', Math.max(expiresAt, Date.now() + 1000), 'NX');
    if (set === 'OK') return 'first';
    return (await this.redis.get(key)) === digest ? 'same' : 'conflict';
  }

  /**
   * Relays progress of external work: notifications/progress with the request's progressToken (T-PROG-1), and a
   * new statusMessage when the report carries one. Returns false when the task is no longer live.
   */
  async progress(record: TaskRecord, report: ExternalProgress): Promise<boolean> {
    if (isTerminal(record.status)) return false;
    const { progress, total, message } = report;
    const writes: Promise<unknown>[] = [];
    if (record.progressToken !== undefined) {
      writes.push(
        this.events.append(record.sessionId, record.taskId, {
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: {
            progressToken: record.progressToken,
            progress,
            ...(total !== undefined ? { total } : {}),
            ...(message ? { message } : {}),
            ...(record.kind === TaskKind.Task ? { _meta: relatedTaskMeta(record.taskId) } : {}),
          },
        }),
      );
    }
    if (message && message !== record.statusMessage) {
      writes.push(
        this.store.note(record, record.status === TaskStatus.Working ? TaskStatus.Working : record.status, message),
      );
    }
    await Promise.all(writes);
    return true;
  }
}

/**
 * Tells the external system a task was cancelled (or expired): POST to its cancel URL with an empty JSON body.
 * Best effort and bounded: the task is already `cancelled` on our side whatever the external system answers.
 */
export async function forwardCancel(
  ref: ExternalRef | undefined,
  timeoutMs = CANCEL_FORWARD_TIMEOUT_MS,
): Promise<boolean> {
  if (!ref?.cancelUrl) return false;
  try {
    const response = await fetch(ref.cancelUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}
