// The fixture tools the official conformance suite calls (its tasks scenarios and the generic 2026-07-28 tool
// scenarios; none ships with the suite). Loaded only by the worker `pnpm conformance` starts (MCPT_TOOLS); never
// part of what users run.
import {
  defineTool,
  ErrorCode,
  ProtocolError,
  TaskSupport,
  type ElicitParams,
  type ToolContext,
} from '@mcp-tasks/protocol';
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

const capitalQuestion = {
  messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
  maxTokens: 100,
};

/** An elicitation form asking for one required field. */
function oneFieldForm(message: string, field: string, type: 'string' | 'boolean'): ElicitParams {
  return { message, requestedSchema: { type: 'object', properties: { [field]: { type } }, required: [field] } };
}

function nameOf(answer: Record<string, unknown>): string {
  const name = (answer['content'] as Record<string, unknown> | undefined)?.['name'];
  return typeof name === 'string' ? name : 'stranger';
}

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
    async run({ seconds, label }, { signal, progress }) {
      for (let second = 0; second < seconds; second++) {
        await progress(second, seconds, `Computed ${second}s of ${seconds}s`);
        await sleep(1000, signal);
      }
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
    inputFirst: true,
    async run(_args, context) {
      const answer = await context.elicit(oneFieldForm('Please enter your name.', 'name', 'string'));
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
    name: 'test_missing_capability',
    description: 'Asks the client for a completion: a caller without `sampling` gets -32021.',
    inputSchema: z.object({}),
    async run(_args, context) {
      const answer = await context.sample({
        messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }],
        maxTokens: 20,
      });
      return text(`Sampled: ${JSON.stringify(answer['content'] ?? null)}`);
    },
  }),
  defineTool({
    name: 'test_streaming_elicitation',
    description: 'Asks the user a question while it runs (an MRTR round on the 2026-07-28 wire).',
    inputSchema: z.object({}),
    async run(_args, context) {
      const answer = await context.elicit(oneFieldForm('What is your name?', 'name', 'string'));
      return text(`Elicitation answered: ${JSON.stringify(answer['content'] ?? null)}`);
    },
  }),
  defineTool({
    name: 'test_logging_tool',
    description: 'Runs and logs on the server only (no logLevel, no log notifications).',
    inputSchema: z.object({}),
    run: (_args, { log }) => {
      log.info('test_logging_tool ran');
      return Promise.resolve(text('Logging tool completed'));
    },
  }),
  // The MRTR (input-required-result-*) scenarios: each question under the key the scenario expects.
  defineTool({
    name: 'test_input_required_result_elicitation',
    description: 'Asks for a name (key user_name), then greets.',
    inputSchema: z.object({}),
    async run(_args, context) {
      const answer = await context.elicit(oneFieldForm('What is your name?', 'name', 'string'), { key: 'user_name' });
      return text(`Hello, ${nameOf(answer)}!`);
    },
  }),
  defineTool({
    name: 'test_input_required_result_sampling',
    description: 'Asks the client model a question (key capital_question).',
    inputSchema: z.object({}),
    async run(_args, context) {
      const answer = await context.sample(capitalQuestion, { key: 'capital_question' });
      return text(`The model said: ${JSON.stringify(answer['content'] ?? null)}`);
    },
  }),
  defineTool({
    name: 'test_input_required_result_list_roots',
    description: "Asks for the client's roots (key client_roots).",
    inputSchema: z.object({}),
    async run(_args, context) {
      const answer = await context.listRoots({ key: 'client_roots' });
      return text(`Roots: ${JSON.stringify(answer['roots'] ?? [])}`);
    },
  }),
  defineTool({
    name: 'test_input_required_result_request_state',
    description: 'Asks for a confirmation (key confirm); the retry carries the signed requestState.',
    inputSchema: z.object({}),
    async run(_args, context) {
      await context.elicit(oneFieldForm('Please confirm', 'ok', 'boolean'), { key: 'confirm' });
      return text('state-ok: the requestState was verified');
    },
  }),
  defineTool({
    name: 'test_input_required_result_multiple_inputs',
    description: 'Asks three questions at once (elicitation, sampling, roots).',
    inputSchema: z.object({}),
    async run(_args, context) {
      const [user, greeting, roots] = await Promise.all([
        context.elicit(oneFieldForm('What is your name?', 'name', 'string'), { key: 'user_name' }),
        context.sample(
          { messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 },
          { key: 'greeting' },
        ),
        context.listRoots({ key: 'client_roots' }),
      ]);
      return text(
        `Got ${nameOf(user)}, ${JSON.stringify(greeting['content'] ?? null)}, ${JSON.stringify(roots['roots'] ?? [])}`,
      );
    },
  }),
  defineTool({
    name: 'test_input_required_result_multi_round',
    description: 'Asks two questions one after the other (keys step1, step2).',
    inputSchema: z.object({}),
    async run(_args, context) {
      const first = await context.elicit(oneFieldForm('Step 1: What is your name?', 'name', 'string'), {
        key: 'step1',
      });
      const second = await context.elicit(oneFieldForm('Step 2: What is your favorite color?', 'color', 'string'), {
        key: 'step2',
      });
      const color = (second['content'] as Record<string, unknown> | undefined)?.['color'];
      return text(`${nameOf(first)} likes ${typeof color === 'string' ? color : 'no color'}`);
    },
  }),
  defineTool({
    name: 'test_input_required_result_tampered_state',
    description: 'Asks for a confirmation; a retry with a forged requestState is refused.',
    inputSchema: z.object({}),
    async run(_args, context) {
      await context.elicit(oneFieldForm('Please confirm', 'ok', 'boolean'), { key: 'confirm' });
      return text('confirmed');
    },
  }),
  defineTool({
    name: 'test_input_required_result_capabilities',
    description: 'Asks the user if the caller declared elicitation, else its model (sampling).',
    inputSchema: z.object({}),
    async run(_args, context) {
      try {
        await context.elicit(oneFieldForm('What is your name?', 'name', 'string'));
        return text('asked the user');
      } catch (error) {
        if (!(error instanceof ProtocolError)) throw error;
        await context.sample(capitalQuestion);
        return text('asked the model');
      }
    },
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
