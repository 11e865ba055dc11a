// `mcpt overview`: tasks per MCP status, the queue depth, connected workers, the oldest waiting task, per tool its
// scheduling: running/limit, queued per principal, rate-limit wait, retries (docs/scheduling.md), the catalog
// entries refused (docs/catalog.md, "Bounds"), the parked tasks (docs/durable-execution.md, "Waits"), and the
// gateway's upstreams (docs/gateway.md).
import type { CatalogRefusal, ParkedOverview, QueueDepth, ToolSchedulingView, UpstreamStatus } from '@mcp-tasks/engine';
import type { Command } from 'commander';
import { formatDuration } from '../duration.ts';
import { table } from '../format.ts';
import { emit, type CliIo } from '../io.ts';
import { withOperator } from '../operator.ts';

export function registerOverview(program: Command, io: CliIo): void {
  program
    .command('overview')
    .description('Counts of tasks per MCP status and of queued jobs, workers connected, oldest waiting task')
    .option('--json', 'print JSON for scripts instead of tables')
    .addHelpText('after', '\nCounting reads the status of every task: it takes about a second per 100k tasks.')
    .action(async (options: { json?: boolean }) => {
      const overview = await withOperator(io, ({ admin }) => admin.overview());
      emit(io, options.json === true, overview, () => {
        const {
          tasks,
          jobs,
          workers,
          oldestWaiting,
          tools = [],
          heldByPrincipal = {},
          refusedTools = [],
          upstreams = [],
          unserved = {},
          parked,
        } = overview;
        const parts = [
          `Tasks: ${tasks.total} (tasks ${tasks.byKind.task}, plain calls ${tasks.byKind.call})`,
          table(
            [{ title: 'status' }, { title: 'count', align: 'right' }],
            Object.entries(tasks.byStatus).map(([status, count]) => [status, String(count)]),
          ),
          '',
          table(
            [{ title: 'jobs' }, { title: 'count', align: 'right' }, { title: 'meaning' }],
            DEPTH_ROWS.map(([state, meaning]) => [state, String(jobs[state]), meaning]),
          ),
          '',
          `Workers connected: ${workers.length}`,
          ...workers.map(
            (worker) => `  ${worker.name || '(unnamed)'}  ${worker.addr}  up ${formatDuration(worker.age * 1000)}`,
          ),
          oldestWaiting
            ? `Oldest waiting task: ${oldestWaiting.taskId} (tool ${oldestWaiting.tool}, owner ${oldestWaiting.owner}), waiting ${formatDuration(oldestWaiting.waitingMs)}`
            : 'Oldest waiting task: none waiting',
          '',
          table(
            [
              { title: 'tool' },
              { title: 'running/limit', align: 'right' },
              { title: 'queued', align: 'right' },
              { title: 'delayed', align: 'right' },
              { title: 'queued per principal' },
              { title: 'rate limit' },
              { title: 'retries', align: 'right' },
              { title: 'timeouts', align: 'right' },
              { title: 'held by caps', align: 'right' },
            ],
            tools.map(toolRow),
          ),
          ...Object.entries(heldByPrincipal).map(
            ([principal, count]) => `Held back by per-principal caps: ${principal}: ${count}`,
          ),
          ...refusedToolLines(refusedTools),
          ...Object.entries(unserved).map(
            ([tool, count]) =>
              `Waiting for a worker: ${count} working task(s) of tool ${tool}, which no live worker serves`,
          ),
          ...parkedLines(parked),
          ...(upstreams.length > 0 ? ['', upstreamTable(upstreams, overview.at)] : []),
        ];
        return parts.join('\n');
      });
    });
}

/** Parked tasks (docs/durable-execution.md, "Waits"): counted by what they wait for, those due first listed. */
function parkedLines(parked: ParkedOverview | undefined): string[] {
  if (!parked) return [];
  const { byKind, soonest } = parked;
  return [
    '',
    `Parked tasks (no worker held): ${byKind.sleep} sleeping, ${byKind.event} waiting for an event, ` +
      `${byKind.input} waiting for their client`,
    table(
      [{ title: 'task' }, { title: 'tool' }, { title: 'owner' }, { title: 'waits for' }, { title: 'until' }],
      soonest.map((entry) => [
        entry.taskId,
        entry.tool,
        entry.owner,
        entry.kind === 'sleep' ? 'sleep' : `${entry.kind} ${entry.name ?? ''}`.trim(),
        entry.until,
      ]),
    ),
  ];
}

/** The queue depth's rows (TaskAdmin.queueJobs), in the words of docs/observability.md. */
const DEPTH_ROWS: readonly (readonly [keyof QueueDepth, string])[] = [
  ['waiting', 'ready to start when a worker slot frees'],
  ['active', 'taken by a worker (running, or waiting for the client)'],
  ['delayed', 'not before a time: retry backoff, held by a cap, next external poll'],
  ['held', 'held back by per-principal caps (most of them delayed)'],
];

/** Live catalog entries every process leaves out (docs/catalog.md, "Bounds"): their publisher must fix them. */
function refusedToolLines(refused: readonly CatalogRefusal[]): string[] {
  if (refused.length === 0) return [];
  return [
    '',
    `Tools refused by the catalog: ${refused.length} (not listed, calls refused)`,
    table(
      [{ title: 'tool' }, { title: 'published by' }, { title: 'reason' }],
      refused.map((refusal) => [refusal.tool, refusal.publisher ?? 'unknown', refusal.reason]),
    ),
  ];
}

function toolRow(tool: ToolSchedulingView): string[] {
  const perPrincipal = Object.entries(tool.queuedByPrincipal)
    .sort(([, a], [, b]) => b - a)
    .map(([principal, count]) => `${principal}: ${count}`)
    .join(', ');
  const rate = tool.scheduling.rateLimit;
  return [
    tool.tool,
    `${tool.running}/${tool.limit ?? '-'}`,
    String(tool.queued),
    String(tool.delayed),
    (perPrincipal || '-') + (tool.queuedSampled ? ' (first 1000)' : ''),
    rate
      ? `${rate.max} per ${formatDuration(rate.perMs)}` +
        (tool.rateLimitedForMs > 0 ? `, waiting ${formatDuration(tool.rateLimitedForMs)}` : '')
      : '-',
    String(tool.counters.retries),
    String(tool.counters.timeouts),
    String(tool.counters.parked),
  ];
}

/** The gateway's upstream MCP servers as each worker sees them (docs/gateway.md, "Operators' views"). */
function upstreamTable(upstreams: readonly UpstreamStatus[], now: number): string {
  return table(
    [
      { title: 'upstream' },
      { title: 'worker' },
      { title: 'state' },
      { title: 'since', align: 'right' },
      { title: 'tools', align: 'right' },
      { title: 'connections', align: 'right' },
      { title: 'reason' },
    ],
    upstreams.map((upstream) => [
      `${upstream.upstream} (${upstream.transport}, ${upstream.affinity})`,
      upstream.worker,
      upstream.state,
      formatDuration(Math.max(0, now - upstream.since)),
      String(upstream.tools),
      String(upstream.connections),
      upstream.reason ?? '-',
    ]),
  );
}
