// A Redis Cluster for tests: 3 masters (and optionally one replica each) from the redis-server binary on free
// loopback ports in a temp dir, joined from Node (ADDSLOTSRANGE, MEET, REPLICATE) and stopped afterwards.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, type Redis } from 'ioredis';
import { freePort, portIsFree } from '../../scripts/lib/ports.ts';
import { connectWhenUp } from './redis-server.ts';
import { track } from './resources.ts';

const SLOTS = 16384;

export interface ClusterNodeHandle {
  port: number;
  id: string;
  process: ChildProcess;
  /** Kills the node (SIGKILL by default), as a crashed machine would go. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface RedisClusterFixture {
  /** `host:port` of every node, the value for REDIS_CLUSTER_NODES. */
  nodes: string[];
  masters: ClusterNodeHandle[];
  replicas: ClusterNodeHandle[];
  password: string | undefined;
  /** A cluster client for inspecting keys from tests (closed by stop). */
  client(): Cluster;
  /** The master serving the slot of `key` right now. */
  masterOf(key: string): Promise<ClusterNodeHandle>;
  /** Resolves once every live node reports cluster_state:ok and suspects no node of failing. */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** Replicas per master (0 or 1); with 1, killing a master promotes its replica. */
  replicas?: 0 | 1;
  /** requirepass/masterauth on every node. */
  password?: string;
  /** cluster-node-timeout: how long a silent master takes to be failed over. */
  nodeTimeoutMs?: number;
}

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisClusterFixture> {
  const masterCount = 3;
  const total = masterCount * (1 + (options.replicas ?? 0));
  const dir = mkdtempSync(join(tmpdir(), 'mcpt-cluster-'));
  const password = options.password;
  const children: ChildProcess[] = [];
  const clients: (Redis | Cluster)[] = [];
  const release = track(`redis-cluster (${dir})`, async () => {
    for (const client of clients) client.disconnect();
    await Promise.all(children.map((child) => killChild(child, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  });
  try {
    const ports: number[] = [];
    // freePort may hand out the same port twice when asked in parallel; ask one by one and skip repeats. Each node
    // also listens on its cluster bus port, port + 10000, which must be free too.
    while (ports.length < total) {
      const port = await freePort();
      const bus = port + 10000;
      if (ports.includes(port) || ports.includes(bus) || ports.some((taken) => taken + 10000 === port)) continue;
      if (bus <= 65535 && (await portIsFree(bus))) ports.push(port);
    }
    const handles = await Promise.all(
      ports.map(async (port) => {
        const args = [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          dir,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          String(options.nodeTimeoutMs ?? 2000),
          '--appendonly',
          'no',
          '--save',
          '',
          '--repl-diskless-sync-delay',
          '0',
          '--daemonize',
          'no',
        ];
        if (password) args.push('--requirepass', password, '--masterauth', password);
        const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
        children.push(child);
        const admin = await connectWhenUp(port, child, password);
        clients.push(admin);
        const id = String(await admin.call('CLUSTER', 'MYID'));
        const handle: ClusterNodeHandle = {
          port,
          id,
          process: child,
          kill: (signal = 'SIGKILL') => killChild(child, signal),
        };
        return { handle, admin };
      }),
    );
    const masters = handles.slice(0, masterCount);
    const replicas = handles.slice(masterCount);
    // Distinct config epochs, as redis-cli --cluster create sets them, so no epoch collision has to be resolved.
    await Promise.all(handles.map(({ admin }, i) => admin.call('CLUSTER', 'SET-CONFIG-EPOCH', String(i + 1))));
    await Promise.all(
      masters.map(({ admin }, i) => {
        const first = Math.floor((SLOTS * i) / masterCount);
        const last = Math.floor((SLOTS * (i + 1)) / masterCount) - 1;
        return admin.call('CLUSTER', 'ADDSLOTSRANGE', String(first), String(last));
      }),
    );
    const [seed] = handles;
    if (!seed) throw new Error('no cluster node started');
    for (const { handle } of handles.slice(1))
      await seed.admin.call('CLUSTER', 'MEET', '127.0.0.1', String(handle.port));
    // A replica can follow its master only once it knows it.
    await waitFor(
      async () => {
        for (const { admin } of handles) {
          const known = String(await admin.call('CLUSTER', 'NODES'))
            .trim()
            .split('\n').length;
          if (known < total) return false;
        }
        return true;
      },
      10_000,
      'every node to know every other node',
    );
    await Promise.all(replicas.map(({ admin }, i) => admin.call('CLUSTER', 'REPLICATE', masters[i]?.handle.id ?? '')));

    let inspector: Cluster | undefined;
    const fixture: RedisClusterFixture = {
      nodes: ports.map((port) => `127.0.0.1:${port}`),
      masters: masters.map(({ handle }) => handle),
      replicas: replicas.map(({ handle }) => handle),
      password,
      client() {
        if (!inspector) {
          inspector = new Cluster(
            ports.map((port) => ({ host: '127.0.0.1', port })),
            { redisOptions: { maxRetriesPerRequest: null, ...(password ? { password } : {}) } },
          );
          inspector.on('error', () => undefined);
          clients.push(inspector);
        }
        return inspector;
      },
      async masterOf(key) {
        const live = handles.find(
          ({ handle }) => handle.process.exitCode === null && handle.process.signalCode === null,
        );
        if (!live) throw new Error('no cluster node is running');
        const slot = Number(await live.admin.call('CLUSTER', 'KEYSLOT', key));
        const ranges = (await live.admin.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, string]][];
        const owner = ranges.find(([first, last]) => slot >= first && slot <= last);
        const found = handles.find(({ handle }) => handle.port === owner?.[2][1]);
        if (!found) throw new Error(`no master serves slot ${slot}`);
        return found.handle;
      },
      async waitUntilHealthy(timeoutMs = 15_000) {
        await waitFor(
          async () => {
            const alive = handles.filter(
              ({ handle }) => handle.process.exitCode === null && handle.process.signalCode === null,
            );
            for (const { admin } of alive) {
              const info = String(await admin.call('CLUSTER', 'INFO'));
              if (!info.includes('cluster_state:ok')) return false;
              const nodes = String(await admin.call('CLUSTER', 'NODES'));
              if (nodes.includes('fail?')) return false;
            }
            return true;
          },
          timeoutMs,
          'cluster_state:ok on every node',
        );
      },
      stop: release,
    };
    await fixture.waitUntilHealthy();
    if (replicas.length > 0) {
      await waitFor(
        async () => {
          for (const { admin } of replicas) {
            const info = String(await admin.call('INFO', 'replication'));
            if (!info.includes('master_link_status:up')) return false;
          }
          return true;
        },
        15_000,
        'every replica to sync with its master',
      );
    }
    return fixture;
  } catch (error) {
    await release();
    throw error;
  }
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // a node may be between states; look again
    }
    if (Date.now() > deadline) throw new Error(`Redis Cluster: timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function killChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}
