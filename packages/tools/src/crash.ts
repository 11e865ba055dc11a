import { defineTool, TaskSupport } from '@mcp-tasks/protocol';
import { z } from 'zod';

export const crashTool = defineTool({
  name: 'crash',
  title: 'Crash',
  description: 'Throws an error with the given message, so the task fails with it.',
  inputSchema: z.object({ message: z.string().max(10_000).describe('The error message to throw') }),
  taskSupport: TaskSupport.Optional,
  run({ message }) {
    return Promise.reject(new Error(message));
  },
});
