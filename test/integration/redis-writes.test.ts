// coalesceWrites (engine redis.ts): the api's and the worker's command connections send the commands of one pass of
// the event loop in one socket write. Replies must still match their commands, in order, for plain commands,
// scripts, pipelines and MULTI, and after a reconnection (a new socket).
import { once } from 'node:events';
import { expect } from 'chai';
import { closeRedis, coalesceWrites, createRedis } from '@mcp-tasks/engine';
import { sharedRedisUrl, uniquePrefix } from '../support/redis-server.ts';

describe('coalesceWrites: one socket write per turn on a Redis connection (real Redis)', () => {
  const prefix = uniquePrefix();
  let redis: ReturnType<typeof createRedis>;

  before(async () => {
    redis = createRedis(await sharedRedisUrl(), 'test-coalesce');
    coalesceWrites(redis);
    await redis.ping();
  });
  after(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await closeRedis(redis);
  });

  async function turnOfCommands(round: number): Promise<void> {
    const stream = (redis as unknown as { stream: { writableCorked: number } }).stream;
    const replies: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) {
      replies.push(redis.set(`${prefix}:k${i}`, `${round}-${i}`), redis.get(`${prefix}:k${i}`));
      replies.push(redis.incr(`${prefix}:counter`));
    }
    replies.push(redis.eval('return ARGV[1] .. KEYS[1]', 1, 'key', 'arg'));
    replies.push(redis.pipeline().set(`${prefix}:p`, 'x').get(`${prefix}:p`).exec());
    replies.push(redis.multi().incr(`${prefix}:m`).incr(`${prefix}:m`).exec());
    // Everything above sits in the corked socket until this turn's callbacks are done.
    expect(stream.writableCorked).to.equal(1);
    const values = await Promise.all(replies);
    expect(stream.writableCorked).to.equal(0);
    for (let i = 0; i < 200; i++) {
      expect(values[3 * i]).to.equal('OK');
      expect(values[3 * i + 1]).to.equal(`${round}-${i}`);
      expect(values[3 * i + 2]).to.equal(round * 200 + i + 1);
    }
    expect(values[600]).to.equal('argkey');
    expect(values[601]).to.deep.equal([
      [null, 'OK'],
      [null, 'x'],
    ]);
    expect(values[602]).to.deep.equal([
      [null, round * 2 + 1],
      [null, round * 2 + 2],
    ]);
  }

  it('answers every command of a turn, in order: plain commands, a script, a pipeline, a MULTI', async () => {
    await turnOfCommands(0);
    await turnOfCommands(1);
  });

  it('does the same on the new socket after a reconnection', async () => {
    const ready = once(redis, 'ready');
    redis.disconnect(true);
    await ready;
    await turnOfCommands(2);
  });
});
