// The tasks extension's methods (X-GET-*, X-UPD-*, X-CAN-*): tasks/get with what the status carries inlined,
// tasks/update routing each answer to the waiting worker, tasks/cancel with its empty ack. Each request is gated on
// its own declaration of the extension (X-ERR-2), before the task is looked up.
import {
  InvalidInputError,
  modernDetailedTask,
  ModernErrorCode,
  parseParams,
  parseTaskId,
  ProtocolError,
  TASKS_EXTENSION,
} from '@mcp-tasks/protocol';
import { z } from 'zod';
import { answerTaskInputs, outstandingInputs } from '../../calls/inputs.ts';
import { cancelTask as cancel, findTask } from '../../calls/tasks.ts';
import { wireMethod } from '../method-table.ts';
import { callContextOf, declaresTasks, type ModernContext, type ModernReply } from './context.ts';

const EMPTY_ACK = { resultType: 'complete' } as const;

/** At most this many answers in one tasks/update (the body cap bounds their size). */
const MAX_INPUT_RESPONSES = 64;

const UpdateParamsSchema = z.looseObject({
  taskId: z.string().min(1).max(256),
  inputResponses: z.record(z.string().max(256), z.unknown()),
});

export const getTask = wireMethod<ModernContext, string, ModernReply, ModernReply>('tasks/get', {
  parse: (params, context) => {
    requireExtension(context, 'tasks/get');
    return parseTaskId(params, 'tasks/get');
  },
  run: async (taskId, context) => {
    const record = await findTask(callContextOf(context), taskId);
    return modernDetailedTask(record, await outstandingInputs(context.services, record));
  },
  render: (detailed) => detailed,
});

export const updateTask = wireMethod<ModernContext, z.infer<typeof UpdateParamsSchema>, void, ModernReply>(
  'tasks/update',
  {
    parse: (params, context) => {
      requireExtension(context, 'tasks/update');
      const update = parseParams(UpdateParamsSchema, params, 'tasks/update');
      if (Object.keys(update.inputResponses).length > MAX_INPUT_RESPONSES) {
        throw new InvalidInputError(`Too many inputResponses: at most ${MAX_INPUT_RESPONSES} in one tasks/update`);
      }
      return update;
    },
    run: async ({ taskId, inputResponses }, context) => {
      const record = await findTask(callContextOf(context), taskId);
      await answerTaskInputs(context, record, Object.entries(inputResponses));
    },
    render: () => EMPTY_ACK,
  },
);

export const cancelTask = wireMethod<ModernContext, string, unknown, ModernReply>('tasks/cancel', {
  parse: (params, context) => {
    requireExtension(context, 'tasks/cancel');
    return parseTaskId(params, 'tasks/cancel');
  },
  run: (taskId, context) => cancel(callContextOf(context), taskId),
  // A task that already ended gets the same ack (X-CAN-2): cancellation is a wish, not a command.
  render: () => EMPTY_ACK,
});

function requireExtension(context: ModernContext, method: string): void {
  if (declaresTasks(context.request.clientCapabilities)) return;
  throw new ProtocolError(
    ModernErrorCode.MissingRequiredClientCapability,
    `${method} needs the '${TASKS_EXTENSION}' extension declared in this request's clientCapabilities`,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  );
}
