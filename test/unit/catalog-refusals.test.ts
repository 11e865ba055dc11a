// What a refused catalog entry costs the api and what it shows (docs/catalog.md, "Bounds").
import { expect } from 'chai';
import { ApiTools } from '@mcp-tasks/api/tool-catalog';
import { type ArgumentValidator, CatalogConflictError, type CatalogRefusal, type CatalogView } from '@mcp-tasks/engine';
import { UnavailableError } from '@mcp-tasks/protocol';

/** The part of a CatalogView that ApiTools reads, counting how often it is asked to read Redis again. */
function viewWith(refused: CatalogRefusal[]): { view: CatalogView; reads: () => number } {
  let reads = 0;
  const view = {
    loaded: true,
    entries: () => new Map(),
    waitFor: () => Promise.resolve(undefined),
    onChange: () => () => undefined,
    refusal: (name: string) => refused.find((refusal) => refusal.tool === name),
    get: () => {
      reads++;
      return Promise.resolve(undefined);
    },
  };
  return { view: view as unknown as CatalogView, reads: () => reads };
}

describe('refused catalog entries', () => {
  it('a call of a refused tool is answered from the cached view, naming the tool and the reason', async () => {
    const { view, reads } = viewWith([{ tool: 'bad', reason: 'it is not JSON', publisher: 'worker-a' }]);
    const tools = new ApiTools(view, {} as ArgumentValidator);
    for (let i = 0; i < 20; i++) {
      const error = await tools.get('bad').catch((caught: unknown) => caught);
      expect(error).to.be.instanceOf(UnavailableError);
      expect((error as Error).message).to.equal(
        "Tool 'bad' cannot be called: its catalog entry is refused (it is not JSON); its publisher must fix it",
      );
    }
    expect(reads()).to.equal(0);
    await tools.get('unknown').catch(() => undefined);
    expect(reads()).to.equal(1); // a tool published a moment ago is still looked for
  });

  it('a conflict quotes only the beginning of a live entry, which may be anyone’s and of any size', () => {
    const error = new CatalogConflictError('t', '{"name":"t"}', `{"description":"${'x'.repeat(20_000_000)}"}`, 60_000);
    expect(error.message.length).to.be.below(3000);
    expect(error.message).to.match(/\.\.\. \(20000018 characters\) This worker's: \{"name":"t"\}$/);
  });
});
