// The fixture tools the official conformance suite calls (its tasks scenarios and the generic 2026-07-28 tool
// scenarios; none ships with the suite). Loaded only by the worker `pnpm conformance` starts (MCPT_TOOLS); never
// part of what users run.
import { defineTool, ErrorCode, ProtocolError, TaskSupport, type ToolContext } from '@mcp-tasks/protocol';
import { z } from 'zod';

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(signal.reason as Error);
    }
    signal.addEventListener('abort', abort, { once: true });
  });
}

const text = (value: string) => ({ content: [{ type: 'text', text: value }] });

const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV_EMPTY = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=';

async function askConfirm(context: ToolContext, message: string): Promise<boolean> {
  const answer = await context.elicit({
    message,
    requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
  });
  const content = answer['content'] as Record<string, unknown> | undefined;
  return answer['action'] === 'accept' && content?.['confirm'] === true;
}

export const tools = [
  defineTool({
    name: 'greet',
    description: 'Greets by name, synchronously (never a task).',
    inputSchema: z.object({ name: z.string() }),
    taskSupport: TaskSupport.Forbidden,
    run: ({ name }) => Promise.resolve(text(`Hello, ${name}!`)),
  }),
  defineTool({
    name: 'slow_compute',
    description: 'Computes for the given number of seconds (a task when the caller takes one).',
    inputSchema: z.object({ seconds: z.number().int().min(0).max(3600), label: z.string().optional() }),
    taskSupport: TaskSupport.Optional,
    async run({ seconds, label }, { signal }) {
      await sleep(seconds * 1000, signal);
      return text(`Computed ${label ?? 'result'} in ${seconds}s`);
    },
  }),
  defineTool({
    name: 'failing_job',
    description: 'Runs for about a second, then reports a tool error (isError).',
    inputSchema: z.object({}),
    taskSupport: TaskSupport.Required,
    async run(_args, { signal }) {
      await sleep(1000, signal);
      return { content: [{ type: 'text', text: 'The job failed on purpose.' }], isError: true };
    },
  }),
  defineTool({
    name: 'protocol_error_job',
    description: 'Runs for about a second, then fails with a JSON-RPC error.',
    inputSchema: z.object({}),
    taskSupport: TaskSupport.Required,
    async run(_args, { signal }) {
      await sleep(1000, signal);
      throw new ProtocolError(ErrorCode.InternalError, 'The job hit a protocol error on purpose.');
    },
  }),
  defineTool({
    name: 'confirm_delete',
    description: 'Asks the user to confirm, then "deletes" the file.',
    inputSchema: z.object({ filename: z.string() }),
    taskSupport: TaskSupport.Required,
    async run({ filename }, context) {
      const confirmed = await askConfirm(context, `Delete ${filename}?`);
      return text(confirmed ? `Deleted ${filename}` : `Kept ${filename}`);
    },
  }),
  defineTool({
    name: 'multi_input',
    description: 'Asks two questions at once.',
    inputSchema: z.object({}),
    taskSupport: TaskSupport.Required,
    async run(_args, context) {
      const schema = {
        type: 'object',
        properties: { name: { type: 'string' }, confirm: { type: 'boolean' } },
      };
      const [first, second] = await Promise.all([
        context.elicit({ message: 'First question', requestedSchema: schema }),
        context.elicit({ message: 'Second question', requestedSchema: schema }),
      ]);
      return text(`Answers: ${JSON.stringify([first['content'], second['content']])}`);
    },
  }),
  defineTool({
    name: 'test_tool_with_task',
    description: 'Asks for a name, then works for a second and greets.',
    inputSchema: z.object({}),
    taskSupport: TaskSupport.Optional,
    async run(_args, context) {
      const answer = await context.elicit({
        message: 'Please enter your name.',
        requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      });
      const name = (answer['content'] as Record<string, unknown> | undefined)?.['name'];
      await sleep(1000, context.signal);
      return text(`Hello, ${typeof name === 'string' ? name : 'stranger'}!`);
    },
  }),
  // The everything-server tools of the generic scenarios.
  defineTool({
    name: 'test_simple_text',
    description: 'Returns simple text content.',
    inputSchema: z.object({}),
    run: () => Promise.resolve(text('This is a simple text response for testing.')),
  }),
  defineTool({
    name: 'test_image_content',
    description: 'Returns image content.',
    inputSchema: z.object({}),
    run: () => Promise.resolve({ content: [{ type: 'image', data: PNG_1PX, mimeType: 'image/png' }] }),
  }),
  defineTool({
    name: 'test_audio_content',
    description: 'Returns audio content.',
    inputSchema: z.object({}),
    run: () => Promise.resolve({ content: [{ type: 'audio', data: WAV_EMPTY, mimeType: 'audio/wav' }] }),
  }),
  defineTool({
    name: 'test_embedded_resource',
    description: 'Returns an embedded resource.',
    inputSchema: z.object({}),
    run: () =>
      Promise.resolve({
        content: [
          {
            type: 'resource',
            resource: {
              uri: 'test://embedded-resource',
              mimeType: 'text/plain',
              text: 'This is an embedded resource content.',
            },
          },
        ],
      }),
  }),
  defineTool({
    name: 'test_multiple_content_types',
    description: 'Returns text, image and resource content.',
    inputSchema: z.object({}),
    run: () =>
      Promise.resolve({
        content: [
          { type: 'text', text: 'Multiple content types test:' },
          { type: 'image', data: PNG_1PX, mimeType: 'image/png' },
          {
            type: 'resource',
            resource: {
              uri: 'test://mixed-content-resource',
              mimeType: 'application/json',
              text: '{"test":"data","value":123}',
            },
          },
        ],
      }),
  }),
  defineTool({
    name: 'test_error_handling',
    description: 'Always returns a tool error.',
    inputSchema: z.object({}),
    run: () =>
      Promise.resolve({
        content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
        isError: true,
      }),
  }),
  defineTool({
    name: 'test_tool_with_progress',
    description: 'Reports progress three times.',
    inputSchema: z.object({}),
    async run(_args, { progress, signal }) {
      for (const step of [0, 50, 100]) {
        await progress(step, 100, `step ${step}`);
        await sleep(300, signal);
      }
      return text('Progress tool completed');
    },
  }),
];
