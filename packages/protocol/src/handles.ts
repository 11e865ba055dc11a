// Task handles: how a client that did not negotiate Tasks follows a long call (docs/clients.md). A call still running
// after HANDLE_AFTER_MS is answered with a handle (a CallToolResult naming its task), and four tools of the server's
// own read, wait for, cancel and answer it. Their listings and results are rendered here, once for both wires: they
// are CallToolResults, not task methods, so each wire adds only its own envelope (2026-07-28: `resultType`).
import { z } from 'zod';
import { InvalidInputError } from './errors.ts';
import type { JsonRpcErrorObject } from './jsonrpc.ts';
import { describeIssues } from './schemas.ts';
import type { InputRequest } from './modern.ts';
import { relatedTaskMeta } from './meta.ts';
import { cancelledSettlement } from './outcome.ts';
import type { TaskRecord } from './task.ts';
import { TaskStatus, isTerminal } from './task-status.ts';

/** The four handle tools, by what they do; their names are the prefix (TASK_HANDLE_TOOL_PREFIX) and these. */
export const HandleTool = { Status: 'status', Result: 'result', Cancel: 'cancel', Answer: 'answer' } as const;
export type HandleTool = (typeof HandleTool)[keyof typeof HandleTool];

/** The handle tools' names: `<prefix>status`, `<prefix>result`, `<prefix>cancel`, `<prefix>answer`. */
export class HandleToolNames {
  readonly #byName: ReadonlyMap<string, HandleTool>;

  constructor(readonly prefix: string) {
    this.#byName = new Map(Object.values(HandleTool).map((tool) => [`${prefix}${tool}`, tool]));
  }

  of(tool: HandleTool): string {
    return `${this.prefix}${tool}`;
  }

  /** Which handle tool `name` is, if it is one. */
  toolOf(name: unknown): HandleTool | undefined {
    return typeof name === 'string' ? this.#byName.get(name) : undefined;
  }

  has(name: string): boolean {
    return this.#byName.has(name);
  }
}

const TASK_ID = {
  type: 'string',
  minLength: 1,
  maxLength: 256,
  description: 'The taskId a long call answered with (structuredContent.taskId)',
} as const;

const idOnly = { type: 'object', properties: { taskId: TASK_ID }, required: ['taskId'], additionalProperties: false };

/** The handle tools as tools/list lists them (2025-11-25 shape: the 2026-07-28 wire drops `execution`). */
export function handleToolListing(names: HandleToolNames): Record<string, unknown>[] {
  const listing = (tool: HandleTool, entry: Record<string, unknown>) => ({
    name: names.of(tool),
    ...entry,
    execution: { taskSupport: 'forbidden' },
  });
  return [
    listing(HandleTool.Answer, {
      title: 'Answer a task',
      description:
        `Answers what a running task asks (its status is input_required and ${names.of(HandleTool.Status)} shows ` +
        'inputRequests): give each request key the response its method expects, e.g. ' +
        '{"action":"accept","content":{...}} for elicitation/create. Returns the task status afterwards.',
      inputSchema: {
        type: 'object',
        properties: {
          taskId: TASK_ID,
          inputResponses: {
            type: 'object',
            description: `The responses, by the keys of the inputRequests ${names.of(HandleTool.Status)} shows`,
            additionalProperties: { type: 'object' },
          },
        },
        required: ['taskId', 'inputResponses'],
        additionalProperties: false,
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    }),
    listing(HandleTool.Cancel, {
      title: 'Cancel a task',
      description: 'Stops a running task (a long call answered with a taskId). A task that has ended stays as it is.',
      inputSchema: idOnly,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    }),
    listing(HandleTool.Result, {
      title: 'Result of a task',
      description:
        "Returns the tool's own result of a task (a long call answered with a taskId), waiting a few seconds for " +
        'it if the task is still running; if it is still running after that, says so: call again later.',
      inputSchema: idOnly,
      annotations: { readOnlyHint: true, openWorldHint: false },
    }),
    listing(HandleTool.Status, {
      title: 'Status of a task',
      description:
        'Reports a task (a long call answered with a taskId): its status, status message and progress, what it ' +
        'asks when it waits for input, and its result once it has ended.',
      inputSchema: idOnly,
      annotations: { readOnlyHint: true, openWorldHint: false },
    }),
  ];
}

/** A handle tool's arguments, as its listing declares them. */
export type HandleToolArguments =
  | { tool: Exclude<HandleTool, 'answer'>; taskId: string }
  | { tool: typeof HandleTool.Answer; taskId: string; inputResponses: [string, unknown][] };

/** At most this many answers in one task_answer call (as tasks/update; the body cap bounds their size). */
export const MAX_HANDLE_INPUT_RESPONSES = 64;

const IdArgumentsSchema = z.strictObject({ taskId: z.string().min(1).max(256) });
const AnswerArgumentsSchema = z.strictObject({
  taskId: z.string().min(1).max(256),
  inputResponses: z
    .record(z.string().max(256), z.record(z.string(), z.unknown()))
    .refine((responses) => Object.keys(responses).length <= MAX_HANDLE_INPUT_RESPONSES, {
      message: `at most ${MAX_HANDLE_INPUT_RESPONSES} responses`,
    }),
});

/** The arguments of a call of handle tool `tool` (named `name`), or InvalidInputError saying what is wrong. */
export function parseHandleArguments(tool: HandleTool, name: string, args: unknown): HandleToolArguments {
  const schema = tool === HandleTool.Answer ? AnswerArgumentsSchema : IdArgumentsSchema;
  const parsed = schema.safeParse(args ?? {});
  if (!parsed.success)
    throw new InvalidInputError(`Invalid arguments for tool '${name}': ${describeIssues(parsed.error)}`);
  if (tool !== HandleTool.Answer) return { tool, taskId: parsed.data.taskId };
  const { taskId, inputResponses } = parsed.data as z.infer<typeof AnswerArgumentsSchema>;
  return { tool, taskId, inputResponses: Object.entries(inputResponses) };
}

/** What a handle tool reports of a task: the record, and what is read beside it. */
export interface HandleView {
  record: TaskRecord;
  /** The tool's last progress report (its job's), when it made one. */
  progress?: unknown;
  /** The task's outstanding input requests, by the keys task_answer takes. */
  inputs?: Record<string, InputRequest>;
}

/** The facts every handle result carries in structuredContent (and the result inline once the task has ended). */
export function handleFacts(view: HandleView): Record<string, unknown> {
  const { record, progress, inputs } = view;
  const facts: Record<string, unknown> = {
    taskId: record.taskId,
    tool: record.tool,
    status: shownStatus(view),
    ...(record.statusMessage !== undefined && record.statusMessage !== ''
      ? { statusMessage: record.statusMessage }
      : {}),
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(record.lastUpdatedAt).toISOString(),
    ttl: record.ttl,
    pollInterval: record.pollInterval,
  };
  if (progress !== undefined && progress !== null && !isTerminal(record.status)) facts['progress'] = progress;
  if (shownStatus(view) === TaskStatus.InputRequired && inputs) facts['inputRequests'] = inputs;
  const ended = endedWith(record);
  if (ended) Object.assign(facts, ended);
  return facts;
}

/**
 * The answer of a call that is still running after HANDLE_AFTER_MS: what a model needs to follow it, in words and
 * in structuredContent (the task id, its status, the poll interval to keep).
 */
export function handleStartedResult(view: HandleView, names: HandleToolNames): Record<string, unknown> {
  const { record } = view;
  // A handle sent again (a resumed answer stream) for a task that has ended since: its status says so.
  if (isTerminal(record.status)) return handleStatusResult(view, names);
  const id = JSON.stringify({ taskId: record.taskId });
  const text =
    `Started task ${record.taskId}: tool '${record.tool}' is still running, so this call returns now instead of ` +
    `waiting. Call \`${names.of(HandleTool.Status)}\` with ${id} about every ${seconds(record.pollInterval)} to ` +
    `follow it; once it has ended, \`${names.of(HandleTool.Result)}\` with ${id} returns the tool's result. ` +
    `\`${names.of(HandleTool.Cancel)}\` stops it.`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: handleFacts(view),
    _meta: relatedTaskMeta(record.taskId),
  };
}

/** task_status (and task_cancel, task_answer, a task_result that is not ready): the task as it is now. */
export function handleStatusResult(view: HandleView, names: HandleToolNames): Record<string, unknown> {
  const { record } = view;
  const facts = handleFacts(view);
  const content: Record<string, unknown>[] = [{ type: 'text', text: statusText(view, names) }];
  const result = facts['result'] as { content?: unknown } | undefined;
  if (result && Array.isArray(result.content)) content.push(...(result.content as Record<string, unknown>[]));
  return { content, structuredContent: facts, _meta: relatedTaskMeta(record.taskId) };
}

function statusText(view: HandleView, names: HandleToolNames): string {
  const { record } = view;
  const head = `Task ${record.taskId} (tool '${record.tool}') is ${shownStatus(view)}`;
  const message = record.statusMessage ? `: ${record.statusMessage}` : '.';
  const id = JSON.stringify({ taskId: record.taskId });
  switch (shownStatus(view)) {
    case TaskStatus.Working:
      return (
        `${head}${message} Call \`${names.of(HandleTool.Status)}\` again in about ${seconds(record.pollInterval)}, ` +
        `or \`${names.of(HandleTool.Result)}\` with ${id} to wait a little for its result.`
      );
    case TaskStatus.InputRequired:
      return `${head}${message} It asks:\n${describeInputs(view.inputs ?? {})}\nAnswer with \`${names.of(
        HandleTool.Answer,
      )}\` and {"taskId":"${record.taskId}","inputResponses":{"<key>":<response>}}.`;
    case TaskStatus.Completed:
      return `${head}${message} Its result follows.`;
    case TaskStatus.Failed:
      return `${head}${message}${'result' in (endedWith(record) ?? {}) ? ' Its result follows.' : ''}`;
    default:
      return `${head}${message}`;
  }
}

function describeInputs(inputs: Record<string, InputRequest>): string {
  return Object.entries(inputs)
    .map(([key, request]) => {
      const message = request.params['message'];
      const what = typeof message === 'string' ? `: ${message}` : '';
      return `- key "${key}", ${request.method}${what} (params: ${JSON.stringify(request.params)})`;
    })
    .join('\n');
}

/**
 * input_required with no request left to answer (all answered, the worker not resumed yet) is shown working, as the
 * 2026-07-28 tasks/get shows it: input_required always comes with something to answer.
 */
function shownStatus({ record, inputs }: HandleView): TaskStatus {
  if (record.status === TaskStatus.InputRequired && inputs !== undefined && Object.keys(inputs).length === 0)
    return TaskStatus.Working;
  return record.status;
}

/** What an ended task gives: its tool's result, or the JSON-RPC error the plain call would have answered. */
function endedWith(
  record: TaskRecord,
): { result: Record<string, unknown> } | { error: JsonRpcErrorObject } | undefined {
  if (!isTerminal(record.status)) return undefined;
  const outcome = record.outcome ?? cancelledSettlement(record.statusMessage).outcome;
  return 'result' in outcome ? { result: outcome.result } : { error: outcome.error };
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
