// `mcpt inspect <taskId>`: the record, its status history, its BullMQ job, and its result or error.
import type { Command } from 'commander';
import {
  operatorInspection,
  operatorTask,
  type DurableView,
  type StepView,
  type TaskInspection,
  type WebhookInspection,
  type WaitsView,
} from '@mcp-tasks/engine';
import { isTerminal } from '@mcp-tasks/protocol';
import { formatDuration } from '../duration.ts';
import { iso, keyValues, table } from '../format.ts';
import { emit, type CliIo } from '../io.ts';
import { CliError, withOperator } from '../operator.ts';

export function registerInspect(program: Command, io: CliIo): void {
  program
    .command('inspect')
    .description(
      'Show one task: record, status history with timestamps, job attempts and worker, progress, checkpoint, ' +
        'steps and child calls in order (start, duration, attempt, size), what it waits for, webhook deliveries ' +
        'and their attempts, result or error',
    )
    .argument('<taskId>', 'the task id')
    .option('--json', 'print JSON for scripts')
    .action(async (taskId: string, options: { json?: boolean }) => {
      const found = await withOperator(io, ({ admin }) => admin.inspect(taskId));
      if (!found) throw new CliError(`Task ${taskId} not found (it never existed, expired or was purged)`);
      // Owner and session by their labels: a session id is a credential (docs/security.md, "Operators' views").
      const inspection = operatorInspection(found);
      emit(io, options.json === true, inspectionJson(inspection), () => inspectionText(inspection, Date.now()));
    });
}

function inspectionJson(inspection: TaskInspection): Record<string, unknown> {
  const { record, job } = inspection;
  const outcome = record.outcome;
  return {
    task: operatorTask(record),
    arguments: inspection.arguments,
    history: inspection.history.map((entry) => ({ ...entry, at: iso(entry.at) })),
    attempts: inspection.attempts.map((entry) => ({
      ...entry,
      startedAt: iso(entry.startedAt),
      ...(entry.endedAt !== undefined ? { endedAt: iso(entry.endedAt) } : {}),
    })),
    job: job ?? null,
    ...(inspection.inconsistency !== undefined ? { inconsistency: inspection.inconsistency } : {}),
    ...(inspection.durable ? { durable: inspection.durable } : {}),
    ...(inspection.steps ? { steps: inspection.steps } : {}),
    ...(inspection.stepsLeftOut !== undefined ? { stepsLeftOut: inspection.stepsLeftOut } : {}),
    ...(inspection.webhook ? { webhook: webhookJson(inspection.webhook) } : {}),
    ...(inspection.waits ? { waits: inspection.waits } : {}),
    ...(outcome && 'result' in outcome ? { result: outcome.result } : {}),
    ...(outcome && 'error' in outcome ? { error: outcome.error } : {}),
  };
}

function inspectionText(inspection: TaskInspection, now: number): string {
  const { record, job } = inspection;
  const end = isTerminal(record.status) ? record.lastUpdatedAt : now;
  const pairs: [string, string][] = [
    ['task', record.taskId],
    ['status', record.status],
    ['status message', record.statusMessage ?? ''],
    ['kind', record.kind],
    ['tool', record.tool],
    ['owner', record.owner],
    ['session', record.sessionId || '-'],
    ['created', `${iso(record.createdAt)} (${formatDuration(now - record.createdAt)} ago)`],
    ['last update', `${iso(record.lastUpdatedAt)} (${formatDuration(now - record.lastUpdatedAt)} ago)`],
    ['expires', `${iso(record.createdAt + record.ttl)} (ttl ${formatDuration(record.ttl)})`],
    [isTerminal(record.status) ? 'duration' : 'running for', formatDuration(end - record.createdAt)],
    ['arguments', JSON.stringify(inspection.arguments)],
  ];
  if (job) {
    pairs.push(
      [
        'job',
        `${job.state} (${job.phase}), attempt ${job.attemptsStarted} of ${job.maxAttempts}, ${job.attemptsMade} failed`,
      ],
      ['worker', job.processedBy ?? '-'],
      ['progress', job.progress === 0 || job.progress === undefined ? '-' : JSON.stringify(job.progress)],
    );
    if (job.stalledCounter > 0) pairs.push(['stalled', `${job.stalledCounter} time(s)`]);
    if (job.failedReason) pairs.push(['last failure', job.failedReason]);
  } else {
    pairs.push(['job', 'none (finished jobs are removed; the record keeps the outcome)']);
  }
  if (inspection.inconsistency) pairs.push(['inconsistent', inspection.inconsistency]);
  const { durable } = inspection;
  if (durable) pairs.push(...durablePairs(durable, now));
  if (inspection.waits) pairs.push(...waitsPairs(inspection.waits, now));
  const { webhook } = inspection;
  if (webhook) pairs.push(...webhookPairs(webhook, now));
  const parts = [
    keyValues(pairs),
    '',
    table(
      [{ title: 'at' }, { title: 'status' }, { title: 'status message', max: 100 }],
      inspection.history.map((entry) => [iso(entry.at), entry.status, entry.statusMessage ?? '']),
    ),
  ];
  if (inspection.attempts.length > 0) parts.push('', 'Attempts:', attemptsTable(inspection, now));
  if (inspection.steps) parts.push('', ...stepsText(inspection.steps, inspection.stepsLeftOut));
  if (durable && durable.children.length > 0) {
    parts.push(
      '',
      'Child tasks:',
      table(
        [{ title: 'task' }, { title: 'tool' }, { title: 'status' }],
        durable.children.map((child) => [child.taskId, child.tool, child.status]),
      ),
    );
  }
  if (webhook && webhook.attempts.length > 0) {
    parts.push(
      '',
      'Webhook attempts:',
      table(
        [
          { title: 'at' },
          { title: 'webhook-id' },
          { title: 'status' },
          { title: 'try' },
          { title: 'outcome' },
          { title: 'answer', max: 100 },
          { title: 'ms' },
          { title: 'worker' },
        ],
        webhook.attempts.map((attempt) => [
          iso(attempt.at),
          attempt.id,
          attempt.status,
          String(attempt.attempt),
          attempt.outcome,
          attempt.error ?? (attempt.code !== undefined ? `HTTP ${attempt.code}` : ''),
          String(attempt.ms),
          attempt.worker,
        ]),
      ),
    );
  }
  const outcome = record.outcome;
  if (outcome) {
    parts.push('', 'result' in outcome ? 'Result:' : 'Error:');
    parts.push(JSON.stringify('result' in outcome ? outcome.result : outcome.error, null, 2));
  }
  return parts.join('\n');
}

/** The attempts of the task's job: worker, start, duration and how each ended (running: the one under way). */
function attemptsTable({ attempts }: TaskInspection, now: number): string {
  return table(
    [{ title: 'attempt' }, { title: 'worker' }, { title: 'started' }, { title: 'for' }, { title: 'ended' }],
    attempts.map((entry) => [
      String(entry.attempt),
      entry.worker,
      iso(entry.startedAt),
      formatDuration((entry.endedAt ?? now) - entry.startedAt),
      entry.ending ?? 'running',
    ]),
  );
}

/** What the task waits for while parked, its waits and the events kept for it (docs/durable-execution.md, "Waits"). */
function waitsPairs(waits: WaitsView, now: number): [string, string][] {
  const pairs: [string, string][] = [];
  const { waiting } = waits;
  if (waiting) {
    const what =
      waiting.kind === 'sleep'
        ? 'sleep'
        : waiting.kind === 'event'
          ? `event '${waiting.name ?? ''}'`
          : `the client's answer to ${waiting.name ?? 'an input request'}`;
    const left = Date.parse(waiting.until) - now;
    const when = left >= 0 ? `in ${formatDuration(left)}` : `${formatDuration(-left)} ago`;
    pairs.push(['parked on', `${what} until ${waiting.until} (${when}; wait ${waiting.key})`]);
  }
  pairs.push(['waits', `${waits.waits} made, ${waits.eventsKept} event(s) kept`]);
  return pairs;
}

/** What the task's tool keeps durably (docs/durable-execution.md): its checkpoint, its steps, its parent. */
function durablePairs(durable: DurableView, now: number): [string, string][] {
  const pairs: [string, string][] = [];
  if (durable.parent !== undefined) pairs.push(['parent', durable.parent]);
  if (durable.resumedFrom !== undefined) pairs.push(['resumed from', durable.resumedFrom]);
  if (durable.resumedBy !== undefined) pairs.push(['resumed by', durable.resumedBy]);
  const { checkpoint } = durable;
  if (checkpoint) {
    const at = Date.parse(checkpoint.at);
    pairs.push(['checkpoint', `${checkpoint.at} (${formatDuration(now - at)} ago), ${checkpoint.bytes} bytes`]);
  }
  if (durable.steps > 0) pairs.push(['steps', `${durable.steps} stored`]);
  if (durable.children.length > 0) pairs.push(['children', String(durable.children.length)]);
  return pairs;
}

/** Each step and child call in the order they started (docs/durable-execution.md, "What operators see"). */
function stepsText(steps: readonly StepView[], leftOut: number | undefined): string[] {
  const rows = steps.map((step, i) => [
    String(i + 1),
    step.kind === 'call' ? `call ${step.tool ?? '?'}` : 'step',
    step.name,
    step.startedAt,
    step.durationMs !== undefined ? formatDuration(step.durationMs) : '-',
    // Stored by an attempt of the task this one resumed (its id in full under `resumed from`, or in --json).
    step.resumedFrom !== undefined ? `${step.attempt} of ${step.resumedFrom.slice(0, 8)}…` : String(step.attempt),
    step.bytes !== undefined ? String(step.bytes) : '-',
    step.kind === 'call' ? `${step.taskId ?? ''} ${step.status ?? ''}`.trim() : '',
  ]);
  return [
    'Steps and child calls:',
    table(
      [
        { title: '#', align: 'right' },
        { title: 'kind' },
        { title: 'name', max: 60 },
        { title: 'started' },
        { title: 'duration', align: 'right' },
        { title: 'attempt' },
        { title: 'bytes', align: 'right' },
        { title: 'child task' },
      ],
      rows,
    ),
    ...(leftOut ? [`(${leftOut} more not shown)`] : []),
  ];
}

/** The task's webhook (docs/webhooks.md): where, which changes, what is still to deliver and when. */
function webhookPairs(webhook: WebhookInspection, now: number): [string, string][] {
  const pairs: [string, string][] = [['webhook', `${webhook.url} (${webhook.events} changes)`]];
  const pending = webhook.pending.map((delivery) => `${delivery.status} (${delivery.attempts} attempts)`);
  pairs.push(['deliveries left', pending.length === 0 ? 'none' : pending.join(', ')]);
  if (webhook.nextAt !== undefined) {
    const next = webhook.nextAt <= now ? 'due now' : `in ${formatDuration(webhook.nextAt - now)}`;
    pairs.push(['next attempt', `${iso(webhook.nextAt)} (${next})`]);
  }
  if (webhook.dropped > 0) pairs.push(['not delivered', `${webhook.dropped} changes (WEBHOOK_MAX_PENDING)`]);
  return pairs;
}

function webhookJson(webhook: WebhookInspection): Record<string, unknown> {
  return {
    ...webhook,
    ...(webhook.nextAt !== undefined ? { nextAt: iso(webhook.nextAt) } : {}),
    attempts: webhook.attempts.map((attempt) => ({
      ...attempt,
      at: iso(attempt.at),
      ...(attempt.nextAt !== undefined ? { nextAt: iso(attempt.nextAt) } : {}),
    })),
  };
}
