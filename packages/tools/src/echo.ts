import { defineTool, TaskSupport } from '@mcp-tasks/protocol';
import { z } from 'zod';

export const echoTool = defineTool({
  name: 'echo',
  title: 'Echo',
  description: 'Returns the text it was given. Plain calls only (taskSupport forbidden).',
  inputSchema: z.object({ text: z.string().max(100_000).describe('Text to send back') }),
  taskSupport: TaskSupport.Forbidden,
  run({ text }) {
    return Promise.resolve({ content: [{ type: 'text', text }] });
  },
});
