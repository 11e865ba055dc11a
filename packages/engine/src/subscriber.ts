// One pub/sub connection per process, shared by every waiter: tasks/result and plain calls wait on it instead of
// polling Redis, and a lost message is covered by the caller's periodic re-check.
import type { RedisClient } from './redis.ts';

type Listener = (message: string) => void;

/** What a waiter wakes on: every message on a channel, or only the messages equal to `message` on it. */
export type WakeOn = string | { channel: string; message: string };

export interface Waiter {
  /** Resolves on the next wake-up (one that came since the last `next` included), after `timeoutMs`, or on abort. */
  next(timeoutMs: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export class Subscriber {
  readonly #listeners = new Map<string, Set<Listener>>();
  /** Each channel's SUBSCRIBE while it is subscribed: a later listener waits for the same confirmation. */
  readonly #subscribed = new Map<string, Promise<unknown>>();
  readonly #pinned = new Map<string, Promise<unknown>>();

  // Also a Cluster: classic PUBLISH reaches every node, and ioredis keeps the subscriptions on one node, moving
  // them when that node goes away.
  constructor(readonly redis: RedisClient) {
    redis.on('message', (channel: string, message: string) => {
      for (const listener of this.#listeners.get(channel) ?? []) listener(message);
    });
  }

  /** Listens to a channel until the returned function is called; resolves once Redis confirmed the subscription. */
  async listen(channel: string, listener: Listener): Promise<() => Promise<void>> {
    let listeners = this.#listeners.get(channel);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(channel, listeners);
    }
    listeners.add(listener);
    // A second listener of a channel whose SUBSCRIBE is still on its way waits for it too: returning at once
    // would let its caller read the state it waits on before Redis delivers the channel, and miss a change.
    let subscribed = this.#subscribed.get(channel);
    if (!subscribed) {
      subscribed = this.redis.subscribe(channel);
      this.#subscribed.set(channel, subscribed);
    }
    const stop = async () => {
      const current = this.#listeners.get(channel);
      if (!current?.delete(listener) || current.size > 0) return;
      this.#listeners.delete(channel);
      this.#subscribed.delete(channel);
      if (this.redis.status === 'ready') await this.redis.unsubscribe(channel).catch(() => undefined);
    };
    try {
      await subscribed;
    } catch (error) {
      await stop();
      throw error;
    }
    return stop;
  }

  /**
   * Subscribes to `channel` for the life of the connection (a replica's own channel): later waiters on it cost no
   * Redis command. Resolves once Redis confirmed it.
   */
  async pin(channel: string): Promise<void> {
    let pinned = this.#pinned.get(channel);
    if (!pinned) {
      pinned = this.listen(channel, () => undefined);
      this.#pinned.set(channel, pinned);
      pinned.catch(() => this.#pinned.delete(channel));
    }
    await pinned;
  }

  /**
   * Resolves on the next message on any of `channels`, after `timeoutMs`, or when `signal` aborts, whichever comes
   * first. Subscribe before reading the state you wait on, then call `next`, so that no change slips between.
   */
  async waiter(...channels: WakeOn[]): Promise<Waiter> {
    let wake: (() => void) | undefined;
    let pending = false;
    const onMessage = () => {
      pending = true;
      wake?.();
    };
    const stops = await Promise.all(
      channels.map((on) =>
        typeof on === 'string'
          ? this.listen(on, onMessage)
          : this.listen(on.channel, (message) => {
              if (message === on.message) onMessage();
            }),
      ),
    );
    return {
      next: (timeoutMs, signal) =>
        new Promise<void>((resolve) => {
          if (pending || signal?.aborted) {
            pending = false;
            resolve();
            return;
          }
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            wake = undefined;
            pending = false;
            resolve();
          };
          const timer = setTimeout(done, timeoutMs);
          signal?.addEventListener('abort', done, { once: true });
          wake = done;
        }),
      close: async () => {
        await Promise.all(stops.map((stop) => stop()));
      },
    };
  }
}
