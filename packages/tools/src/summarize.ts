import { defineTool, TaskSupport } from '@mcp-tasks/protocol';
import { z } from 'zod';

export const summarizeTool = defineTool({
  name: 'summarize',
  title: 'Summarize',
  description: "Asks the client's model (sampling) for a short summary of the text and returns it.",
  inputSchema: z.object({ text: z.string().min(1).max(100_000).describe('The text to summarize') }),
  taskSupport: TaskSupport.Optional,
  async run({ text }, { sample }) {
    const reply = await sample({
      messages: [{ role: 'user', content: { type: 'text', text: `Summarize in one or two sentences:\n\n${text}` } }],
      maxTokens: 300,
    });
    const content = reply['content'] as { type?: string; text?: unknown } | undefined;
    const summary =
      content?.type === 'text' && typeof content.text === 'string' ? content.text : JSON.stringify(content);
    return { content: [{ type: 'text', text: summary }] };
  },
});
