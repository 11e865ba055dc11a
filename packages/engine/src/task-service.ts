// The task operations shared by the api (and later the CLI): create a task with its job, find it for its owner,
// wait for it to end, cancel it.
import { randomUUID } from 'node:crypto';
import {
  cancelledSettlement,
  ErrorCode,
  isTerminal,
  ProtocolError,
  TaskStatus,
  type TaskKind,
  type TaskRecord,
} from '@mcp-tasks/protocol';
import type { Queue } from 'bullmq';
import { stopTaskWork } from './control.ts';
import type { ToolJobData } from './queue.ts';
import { toolJobOptions } from './queue.ts';
import type { RedisClient } from './redis.ts';
import type { Subscriber } from './subscriber.ts';
import type { TaskStore } from './task-store.ts';

export interface TaskTiming {
  defaultTtlMs: number;
  maxTtlMs: number;
  minTtlMs: number;
  pollIntervalMs: number;
  /** How often a waiter re-reads the record even without a pub/sub message (a lost message cannot hang it). */
  recheckMs: number;
}

export interface CreateTaskInput {
  kind: TaskKind;
  owner: string;
  tool: string;
  arguments: unknown;
  retrySafe: boolean;
  requestedTtl?: number;
  progressToken?: string | number;
}

export const TASK_NOT_FOUND = 'Failed to retrieve task: Task not found';
export const TASK_EXPIRED = 'Failed to retrieve task: Task has expired';

export class TaskService {
  constructor(
    private readonly store: TaskStore,
    private readonly queue: Queue<ToolJobData>,
    private readonly publisher: RedisClient,
    private readonly subscriber: Subscriber,
    readonly timing: TaskTiming,
  ) {}

  /** The ttl we grant: the requested one clamped to [min, max], the default when none was asked (T-CREATE-2). */
  grantTtl(requested: number | undefined): number {
    const ttl = requested ?? this.timing.defaultTtlMs;
    return Math.min(Math.max(ttl, this.timing.minTtlMs), this.timing.maxTtlMs);
  }

  /**
   * Writes the record, then the job; answers only when both are in Redis (invariant 2). If the job cannot be
   * added, the record is removed again and the caller gets an internal error, so no task is left without work.
   */
  async create(input: CreateTaskInput): Promise<TaskRecord> {
    const now = Date.now();
    const record: TaskRecord = {
      taskId: randomUUID(),
      kind: input.kind,
      status: TaskStatus.Working,
      statusMessage: 'The task is queued for a worker.',
      createdAt: now,
      lastUpdatedAt: now,
      ttl: this.grantTtl(input.requestedTtl),
      pollInterval: this.timing.pollIntervalMs,
      owner: input.owner,
      tool: input.tool,
    };
    await this.store.create({
      record,
      arguments: input.arguments,
      ...(input.progressToken !== undefined ? { progressToken: input.progressToken } : {}),
    });
    try {
      await this.queue.add(
        input.tool,
        { taskId: record.taskId, tool: input.tool, arguments: input.arguments },
        toolJobOptions(record.taskId, input.retrySafe),
      );
    } catch (error) {
      await this.store.delete(record).catch(() => undefined);
      throw new ProtocolError(ErrorCode.InternalError, `Could not queue the task: ${(error as Error).message}`);
    }
    return record;
  }

  /**
   * The owner's task, or the same -32602 for a task that does not exist, expired, or belongs to someone else
   * (T-ERR-1, T-SEC-1): the caller cannot tell them apart.
   */
  async getOwned(taskId: string, owner: string): Promise<TaskRecord> {
    const record = await this.store.get(taskId);
    if (!record || record.owner !== owner || record.kind !== 'task') {
      throw new ProtocolError(ErrorCode.InvalidParams, TASK_NOT_FOUND);
    }
    return record;
  }

  /**
   * Resolves with the record once it is terminal (T-RES-2). Waits on pub/sub, re-reading the record every
   * `recheckMs` in case a message was lost; rejects when `signal` aborts or the record disappears.
   */
  async waitForTerminal(taskId: string, signal: AbortSignal, read: () => Promise<TaskRecord>): Promise<TaskRecord> {
    const waiter = await this.subscriber.waiter(this.store.keys.taskChannel(taskId));
    try {
      for (;;) {
        const record = await read();
        if (isTerminal(record.status)) return record;
        if (signal.aborted) throw new ProtocolError(ErrorCode.RequestCancelled, 'The request was cancelled');
        await waiter.next(this.timing.recheckMs, signal);
      }
    } finally {
      await waiter.close();
    }
  }

  /**
   * Moves the task to `cancelled` before answering (T-CANCEL-2), then stops the work: a job still queued is
   * removed, a running one is aborted through the control channel.
   */
  async cancel(record: TaskRecord, statusMessage?: string): Promise<TaskRecord> {
    const settlement = cancelledSettlement(statusMessage);
    const moved = await this.store.settle(record.taskId, settlement);
    if (!moved.ok) {
      if (moved.reason === 'missing') throw new ProtocolError(ErrorCode.InvalidParams, TASK_NOT_FOUND);
      throw new ProtocolError(
        ErrorCode.InvalidParams,
        `Cannot cancel task: already in terminal status '${moved.current}'`,
      );
    }
    await stopTaskWork(this.queue, this.publisher, this.store.keys, record.taskId);
    return {
      ...record,
      status: TaskStatus.Cancelled,
      statusMessage: settlement.statusMessage,
      lastUpdatedAt: moved.lastUpdatedAt,
      outcome: settlement.outcome,
    };
  }

  isTerminal(record: TaskRecord): boolean {
    return isTerminal(record.status);
  }
}
