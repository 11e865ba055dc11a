// The tools this project serves. A worker loads this module (compiled to dist/tools.js) with
// MCPT_TOOLS=./dist/tools.js; the api never does: it reads the definitions the worker publishes.
import { defineTool } from 'mcp-task-runner';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';

export const tools = [
  defineTool({
    name: 'resize_images',
    title: 'Resize images',
    description: 'Resizes every image of a bucket to the given width (simulated: 200 ms per image)',
    inputSchema: z.object({
      bucket: z.string().min(1).describe('Where the images are'),
      images: z.number().int().min(1).max(1000).describe('How many images there are'),
      width: z.number().int().min(16).max(8192).default(800),
    }),
    outputSchema: z.object({ resized: z.number(), width: z.number() }),
    annotations: { idempotentHint: true },
    taskSupport: 'optional', // 'required' | 'optional' | 'forbidden'
    async run({ bucket, images, width }, { signal, progress, log }) {
      for (let done = 0; done < images; done++) {
        // A cancelled task aborts the signal: stop promptly.
        await sleep(200, undefined, { signal });
        await progress(done + 1, images, `${done + 1} of ${images} images`);
      }
      log.info('bucket resized', { bucket, images, width });
      return {
        content: [{ type: 'text', text: `Resized ${images} images of ${bucket} to ${width} px` }],
        structuredContent: { resized: images, width },
      };
    },
  }),
];
