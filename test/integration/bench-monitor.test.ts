// scripts/bench/monitor.ts: the steps workload's MONITOR connection. The first test plays a Redis that sends a
// monitored command in the same write as MONITOR's +OK (what a busy Redis does, and what made ioredis's monitor mode
// throw); the second runs against a real redis-server.
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { monitorRedis } from '../../scripts/bench/monitor.ts';
import { startRedisServer } from '../support/redis-server.ts';

describe('bench: the MONITOR connection', () => {
  it('counts a command that arrives in the same read as MONITOR’s +OK', async () => {
    const sockets: Socket[] = [];
    const server: Server = createServer((socket) => {
      sockets.push(socket);
      socket.once('data', () => {
        socket.write('+OK\r\n+1796398479.271160 [0 lua] "HMGET" "q:meta" "paused"\r\n');
        socket.write('+1796398479.271171 [0 127.0.0.1:50000] "EVALSHA" "abc" "1" "k"\r\n');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const seen: string[] = [];
    const both = new Promise<void>((resolve) => {
      const listener = (time: string, source: string, command: string) => {
        seen.push(`${time} ${source} ${command}`);
        if (seen.length === 2) resolve();
      };
      void monitorRedis({ host: '127.0.0.1', port: (server.address() as AddressInfo).port }, listener).then(
        async (monitor) => {
          await both;
          monitor.close();
        },
      );
    });
    await both;
    for (const socket of sockets) socket.destroy();
    server.close();
    expect(seen).to.deep.equal(['1796398479.271160 lua HMGET', '1796398479.271171 127.0.0.1:50000 EVALSHA']);
  });

  it('reports every command a real redis-server runs, with its client', async () => {
    const redisServer = await startRedisServer();
    const client = new Redis(redisServer.url);
    try {
      const seen: string[] = [];
      const monitor = await monitorRedis({ host: '127.0.0.1', port: redisServer.port }, (_time, source, command) =>
        seen.push(`${source === 'lua' ? 'lua' : 'client'} ${command.toLowerCase()}`),
      );
      await client.set('k', 'a "quoted" value');
      await client.eval("return redis.call('GET', KEYS[1])", 1, 'k');
      await client.ping();
      // PING's own line is the last: once it is there, so are the ones before.
      while (!seen.includes('client ping')) await new Promise((resolve) => setTimeout(resolve, 5));
      monitor.close();
      expect(seen).to.include.members(['client set', 'client eval', 'lua get', 'client ping']);
    } finally {
      client.disconnect();
      await redisServer.stop();
    }
  });
});
