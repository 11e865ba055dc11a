import { defineTool, TaskSupport } from '@mcp-tasks/protocol';
import { z } from 'zod';

export const askUserTool = defineTool({
  name: 'ask_user',
  title: 'Ask the user',
  description:
    'Asks the user a question through the client (elicitation) and returns the answer. The task waits in ' +
    'input_required until the client answers; call tasks/result to receive the question.',
  inputSchema: z.object({ question: z.string().min(1).max(2000).describe('What to ask the user') }),
  taskSupport: TaskSupport.Required,
  async run({ question }, { elicit }) {
    const reply = await elicit({
      message: question,
      requestedSchema: {
        type: 'object',
        properties: { answer: { type: 'string', title: 'Answer', description: question } },
        required: ['answer'],
      },
    });
    if (reply['action'] !== 'accept') {
      return { content: [{ type: 'text', text: `The user did not answer (${String(reply['action'])}).` }] };
    }
    const content = reply['content'] as { answer?: unknown } | undefined;
    const answer = typeof content?.answer === 'string' ? content.answer : JSON.stringify(content ?? {});
    return { content: [{ type: 'text', text: answer }], structuredContent: { question, answer } };
  },
});
