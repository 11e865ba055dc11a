// The catalog entry a worker publishes for a tool (docs/catalog.md), and its comparison.
import { expect } from 'chai';
import {
  canonicalJson,
  CatalogEntrySchema,
  catalogEntryOf,
  defineQueueTool,
  defineTool,
  listingOfEntry,
  TaskSupport,
} from '@mcp-tasks/protocol';
import { WaitBudget } from '@mcp-tasks/worker/internals';
import { z } from 'zod';

const resize = defineTool({
  name: 'resize_images',
  title: 'Resize',
  description: 'Resizes images',
  inputSchema: z.object({ bucket: z.string(), width: z.number().int().default(800) }),
  outputSchema: z.object({ resized: z.number() }),
  annotations: { destructiveHint: false },
  taskSupport: TaskSupport.Required,
  retrySafe: false,
  run: () => Promise.resolve({ content: [] }),
});

describe('the tool catalog entry', () => {
  it('carries the JSON Schemas, annotations, taskSupport, retrySafe and the tool’s own queue', () => {
    const entry = catalogEntryOf(resize);
    expect(entry).to.deep.include({
      name: 'resize_images',
      title: 'Resize',
      taskSupport: 'required',
      retrySafe: false,
      queue: 'tool-resize_images',
      external: false,
      annotations: { destructiveHint: false },
    });
    expect(entry.inputSchema).to.deep.include({ type: 'object', required: ['bucket'] });
    expect(entry.inputSchema).to.not.have.property('$schema');
    expect(entry.outputSchema).to.deep.include({ type: 'object', required: ['resized'] });
    expect(CatalogEntrySchema.parse(JSON.parse(JSON.stringify(entry)))).to.deep.equal(entry);
    expect(listingOfEntry(entry)).to.deep.equal({
      name: 'resize_images',
      title: 'Resize',
      description: 'Resizes images',
      inputSchema: entry.inputSchema,
      outputSchema: entry.outputSchema,
      annotations: { destructiveHint: false },
      execution: { taskSupport: 'required' },
    });
  });

  it('names the consumer’s queue for a queue tool, and defaults taskSupport to forbidden and retrySafe to true', () => {
    const entry = catalogEntryOf(
      defineQueueTool({ name: 'shout', description: 'Shouts', inputSchema: z.object({ text: z.string() }) }),
    );
    expect(entry).to.deep.include({ queue: 'ext-shout', external: true, taskSupport: 'forbidden', retrySafe: true });
  });

  it('refuses an entry of the runner’s workers whose queue is not its own', () => {
    const entry = { ...catalogEntryOf(resize), queue: 'tools' };
    expect(CatalogEntrySchema.safeParse(entry).success).to.equal(false);
  });

  it('compares definitions as canonical JSON, whatever the order of their keys', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 0 }], c: 3 } })).to.equal(
      '{"a":{"c":3,"d":[2,{"x":0,"y":1}]},"b":1}',
    );
  });
});

describe('the input-wait budget across tool queues', () => {
  it('is shared by the lenders of all BullMQ workers of a process', () => {
    const budget = new WaitBudget(1);
    const [a, b] = [budget.lender(), budget.lender()];
    const workerA = { concurrency: 2 };
    const workerB = { concurrency: 2 };
    a.attach(workerA);
    b.attach(workerB);
    const release = a.enter();
    expect(workerA.concurrency).to.equal(3);
    b.enter(); // the budget is spent: B keeps its slot
    expect(workerB.concurrency).to.equal(2);
    release();
    expect(workerA.concurrency).to.equal(2);
    b.enter();
    expect(workerB.concurrency).to.equal(3);
  });
});
