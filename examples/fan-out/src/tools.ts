// A fan-out: one task counts the words of many texts by starting a child task per text (ctx.callTool), which any
// worker runs, and adds up their results. While it waits for its children the parent holds no worker slot, so even a
// worker of concurrency 1 runs the parent and all its children. A worker loads this module (compiled to
// dist/tools.js) with MCPT_TOOLS=./dist/tools.js.
import { defineTool } from 'mcp-task-runner';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';

const Count = z.object({ words: z.number() });

export const tools = [
  defineTool({
    name: 'count_words',
    title: 'Count words',
    description: 'Counts the words of one text (simulated: `ms` of work)',
    inputSchema: z.object({ text: z.string().max(100_000), ms: z.number().int().min(0).max(60_000).default(200) }),
    outputSchema: Count,
    taskSupport: 'optional',
    async run({ text, ms }, { signal }) {
      await sleep(ms, undefined, { signal });
      const words = text.split(/\s+/).filter(Boolean).length;
      return { content: [{ type: 'text', text: `${words} words` }], structuredContent: { words } };
    },
  }),
  defineTool({
    name: 'count_words_in_all',
    title: 'Count words in all texts',
    description: 'Counts the words of every text, each as a child task (count_words) on any worker, and adds them up',
    inputSchema: z.object({
      texts: z.array(z.string().max(100_000)).min(1).max(1000),
      ms: z.number().int().min(0).max(60_000).default(200),
    }),
    outputSchema: z.object({ total: z.number(), perText: z.array(z.number()) }),
    taskSupport: 'required',
    async run({ texts, ms }, { callTool, progress }) {
      let done = 0;
      // One child per text, all at once. Each call is a step: after a crash, the next attempt of this task waits for
      // the same children (named count_words#1, #2, ... in the order of the calls) instead of starting new ones.
      const perText = await Promise.all(
        texts.map(async (text) => {
          const result = await callTool('count_words', { text, ms });
          await progress(++done, texts.length, `${done} of ${texts.length} texts counted`);
          return Count.parse(result.structuredContent).words;
        }),
      );
      const total = perText.reduce((sum, words) => sum + words, 0);
      return {
        content: [{ type: 'text', text: `${total} words in ${texts.length} texts` }],
        structuredContent: { total, perText },
      };
    },
  }),
];
