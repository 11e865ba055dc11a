// The shared pub/sub connection (packages/engine/src/subscriber.ts) against a real Redis: a waiter must be
// subscribed when `listen`/`waiter` resolves, since its caller reads the state it waits on right after.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { Subscriber } from '@mcp-tasks/engine';
import { eventually } from '../support/mcp-client.ts';
import { sharedRedisUrl, uniquePrefix } from '../support/redis-server.ts';
import { track } from '../support/resources.ts';

describe('Subscriber: one pub/sub connection shared by every waiter (real Redis)', () => {
  let publisher: Redis;
  let subscriberRedis: Redis;
  let release: () => Promise<void>;

  before(async () => {
    publisher = new Redis(await sharedRedisUrl());
    subscriberRedis = new Redis(await sharedRedisUrl());
    const releasePublisher = track('subscriber test publisher', () => publisher.disconnect());
    const releaseSubscriber = track('subscriber test subscriber', () => subscriberRedis.disconnect());
    release = async () => {
      await releaseSubscriber();
      await releasePublisher();
    };
  });
  after(() => release());

  it('a second listener of a channel whose SUBSCRIBE is in flight resolves only once Redis confirmed it', async () => {
    const subscriber = new Subscriber(subscriberRedis);
    const channel = `${uniquePrefix()}:channel`;
    const order: string[] = [];
    const heard: string[] = [];
    const first = subscriber
      .listen(channel, () => undefined)
      .then((stop) => {
        order.push('first');
        return stop;
      });
    // Not awaited: both listens are under way together, as two requests waiting on one session's channel are.
    const second = subscriber
      .listen(channel, (message) => heard.push(message))
      .then(async (stop) => {
        order.push('second');
        // Subscribed now: a message published after this point must arrive.
        const receivers = await publisher.publish(channel, 'after-second');
        return { stop, receivers };
      });
    const [stopFirst, { stop: stopSecond, receivers }] = await Promise.all([first, second]);
    try {
      expect(order).to.deep.equal(['first', 'second']);
      expect(receivers).to.equal(1);
      await eventually(() => Promise.resolve(heard.includes('after-second') || undefined), 10_000);
    } finally {
      await stopSecond();
      await stopFirst();
    }
  });

  it('a channel is unsubscribed after its last listener stops, and subscribed again by a new one', async () => {
    const subscriber = new Subscriber(subscriberRedis);
    const channel = `${uniquePrefix()}:again`;
    const stop = await subscriber.listen(channel, () => undefined);
    await stop();
    const numsub = async () => Number(((await publisher.pubsub('NUMSUB', channel)) as [string, number])[1]);
    expect(await numsub()).to.equal(0);
    const heard: string[] = [];
    const again = await subscriber.listen(channel, (message) => heard.push(message));
    try {
      expect(await numsub()).to.equal(1);
      await publisher.publish(channel, 'again');
      await eventually(() => Promise.resolve(heard.includes('again') || undefined), 10_000);
    } finally {
      await again();
    }
  });
});
