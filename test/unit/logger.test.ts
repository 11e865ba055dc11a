// createLogger (runtime logger.ts) writes a line winston would pass straight to its Console transport without
// winston's streams. The lines must be those winston's own path writes, byte for byte (timestamps aside), to the
// same stream, in the same order, with the same levels and silences; a logger in another shape keeps winston's path.
import { expect } from 'chai';
import { audit, auditLogger, AuditEvent } from '@mcp-tasks/engine';
import { createLogger, type Logger } from '@mcp-tasks/runtime';

interface Written {
  stream: 'stdout' | 'stderr';
  text: string;
}

/** What `act` writes to stdout and stderr, in order, with timestamps replaced by a placeholder. */
function capture(act: () => void): Written[] {
  const written: Written[] = [];
  const streams = { stdout: process.stdout, stderr: process.stderr } as const;
  const own = {
    stdout: Object.getOwnPropertyDescriptor(process.stdout, 'write'),
    stderr: Object.getOwnPropertyDescriptor(process.stderr, 'write'),
  };
  for (const name of ['stdout', 'stderr'] as const) {
    Object.defineProperty(streams[name], 'write', {
      configurable: true,
      writable: true,
      value: (chunk: unknown): boolean => {
        const text = String(chunk).replace(/\d{2}:\d{2}:\d{2}\.\d{3}|\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'T');
        written.push({ stream: name, text });
        return true;
      },
    });
  }
  try {
    act();
  } finally {
    for (const name of ['stdout', 'stderr'] as const) {
      const descriptor = own[name];
      if (descriptor) Object.defineProperty(streams[name], 'write', descriptor);
      else delete (streams[name] as { write?: unknown }).write;
    }
  }
  return written;
}

/** How many lines reached the transport's `log` (winston's path) while `act` ran. */
function transportLines(log: Logger, act: () => void): number {
  const transport = log.transports[0] as unknown as { log: (...args: unknown[]) => unknown };
  const original = transport.log;
  let count = 0;
  transport.log = (...args: unknown[]) => {
    count++;
    return original.apply(transport, args);
  };
  try {
    act();
  } finally {
    transport.log = original;
  }
  return count;
}

/** winston's own path: a listener of the transport's `logged` event keeps every line in the streams. */
function viaWinston(log: Logger): () => void {
  const listener = () => undefined;
  const [transport] = log.transports;
  transport?.on('logged', listener);
  return () => transport?.off('logged', listener);
}

const thrown = new Error('thrown'); // one stack for both paths

function lines(log: Logger, format: 'json' | 'pretty'): void {
  const child = log.child({ worker: 'w-1' });
  const audits = auditLogger(child);
  log.info('plain');
  log.info('with fields', { taskId: 't-1', count: 3, nested: { a: [1, 'x', null] }, gone: undefined });
  // The pretty format's JSON.stringify throws on a bigint, either way.
  log.warn('a warning', format === 'json' ? { big: 12n } : { big: '12' });
  log.error('an error', { error: new Error('boom').message });
  log.error(thrown);
  log.info('message field', { message: 'appended' });
  log.debug('below the level', { taskId: 't-2' });
  child.info('child line', { sessionId: 'session-secret-1', owner: 'session:session-secret-1' });
  audit(audits, AuditEvent.TaskCreated, { principal: 'session:abc', taskId: 't-3', tool: 'echo', requestId: 7 });
  audit(audits, AuditEvent.TaskCompleted, { principal: 'principal:key:ops', taskId: 't-3', kind: 'task' });
  child.child({ requestId: 9 }).info('grandchild', { method: 'tools/call' });
}

describe('createLogger: lines written without winston streams are those winston writes', () => {
  for (const format of ['json', 'pretty'] as const) {
    for (const hashSessionIds of [true, false]) {
      it(`the same lines, streams and order (${format}, session ids ${hashSessionIds ? 'hashed' : 'kept'})`, () => {
        const direct = createLogger({ service: 'test', level: 'info', format, hashSessionIds });
        const streamed = createLogger({ service: 'test', level: 'info', format, hashSessionIds });
        const restore = viaWinston(streamed);
        let fast: Written[] = [];
        let slow: Written[] = [];
        expect(transportLines(direct, () => (fast = capture(() => lines(direct, format))))).to.equal(0);
        expect(transportLines(streamed, () => (slow = capture(() => lines(streamed, format))))).to.equal(slow.length);
        restore();
        expect(fast.length).to.be.greaterThan(8);
        expect(fast).to.deep.equal(slow);
      });
    }
  }

  it('follows level changes and silence at run time, as winston does', () => {
    const direct = createLogger({ service: 'test', level: 'info', format: 'json' });
    const streamed = createLogger({ service: 'test', level: 'info', format: 'json' });
    const restore = viaWinston(streamed);
    const act = (log: Logger) => () => {
      log.debug('hidden');
      log.level = 'debug';
      log.debug('shown');
      log.silent = true;
      log.error('silenced');
      log.silent = false;
      log.level = 'error';
      log.warn('hidden again');
      log.error('shown again');
      log.log('no-such-level', 'unknown level');
    };
    const fast = capture(act(direct));
    const slow = capture(act(streamed));
    restore();
    const messages = fast
      .filter((w) => w.stream === 'stdout')
      .map((w) => (JSON.parse(w.text) as { message: string }).message);
    // A level the logger does not know: winston complains on stderr and its transport writes nothing.
    expect(messages).to.deep.equal(['shown', 'shown again']);
    expect(fast).to.deep.equal(slow);
  });

  it('keeps the order of lines when one goes through the streams and the next does not', () => {
    const log = createLogger({ service: 'test', level: 'info', format: 'json' });
    const written = capture(() => {
      log.info('first');
      const restore = viaWinston(log);
      log.info('second');
      restore();
      log.info('third');
    });
    expect(written.map((w) => (JSON.parse(w.text) as { message: string }).message)).to.deep.equal([
      'first',
      'second',
      'third',
    ]);
  });
});
