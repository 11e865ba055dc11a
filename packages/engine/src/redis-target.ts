// Where the runner's Redis is: one server (REDIS_URL) or a Redis Cluster reached through seed nodes
// (REDIS_CLUSTER_NODES), and how a cluster client is set up. Pure, so configuration errors surface at start-up.
import type { ClusterOptions } from 'ioredis';
import { maskUrlPasswords } from '@mcp-tasks/runtime';

export interface ClusterNodeAddress {
  host: string;
  port: number;
}

/** The seed nodes of a Redis Cluster and what every node connection needs (credentials, TLS). */
export interface ClusterSeeds {
  nodes: ClusterNodeAddress[];
  username?: string;
  password?: string;
  tls: boolean;
}

/**
 * Parses REDIS_CLUSTER_NODES: comma-separated `host:port` entries, or `redis://` / `rediss://` URLs that may carry
 * credentials. Bare entries share the scheme and credentials of the URL entries, which must all agree, so that
 * `rediss://:secret@node1:6379,node2:6379,node3:6379` means three TLS seeds with one password.
 */
export function parseClusterNodes(value: string): ClusterSeeds {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error('give at least one node as host:port');
  let scheme: string | undefined;
  let credentials: { username?: string; password?: string } | undefined;
  const nodes: ClusterNodeAddress[] = [];
  for (const entry of entries) {
    const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(entry);
    // Messages quote the entry, never its password: they end up in start-up logs.
    const shown = hasScheme ? maskUrlPasswords(entry) : entry.replace(/^[^@/]*@/, '***@');
    let url: URL;
    try {
      url = new URL(hasScheme ? entry : `redis://${entry}`);
    } catch {
      throw new Error(`'${shown}' is not host:port or a redis:// URL`);
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      throw new Error(`'${shown}': only redis:// and rediss:// URLs are accepted`);
    }
    if (url.hostname === '') throw new Error(`'${shown}' has no host`);
    if (!hasScheme && url.port === '') throw new Error(`'${shown}' has no port (write host:port)`);
    if (url.pathname !== '' && url.pathname !== '/' && url.pathname !== '/0') {
      throw new Error(`'${shown}': a Redis Cluster has only database 0`);
    }
    if (hasScheme) {
      if (scheme !== undefined && scheme !== url.protocol) {
        throw new Error('mixes redis:// and rediss:// entries; every node needs the same scheme');
      }
      scheme = url.protocol;
      if (url.username !== '' || url.password !== '') {
        const found = {
          ...(url.username !== '' ? { username: decodeURIComponent(url.username) } : {}),
          ...(url.password !== '' ? { password: decodeURIComponent(url.password) } : {}),
        };
        if (credentials && JSON.stringify(credentials) !== JSON.stringify(found)) {
          throw new Error('entries carry different credentials; a cluster has one user and password for every node');
        }
        credentials = found;
      }
    }
    // URL keeps IPv6 hosts in brackets; sockets want them bare.
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    nodes.push({ host, port: url.port === '' ? 6379 : Number(url.port) });
  }
  return { nodes, ...credentials, tls: scheme === 'rediss:' };
}

/** A hash tag is the part between the first `{` and the next `}`, when not empty: Redis hashes only that. */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open === -1) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

/**
 * True when every key built as `<prefix>:...` (ours and BullMQ's) hashes to one slot: the prefix then holds a
 * whole non-empty `{tag}`, and no brace later in a key (a task id, an owner) can become the key's hash tag instead.
 */
export function prefixPinsOneSlot(prefix: string): boolean {
  return hashTagOf(prefix) !== undefined;
}

/** Options of every cluster client the runner opens (BullMQ's included, which duplicates ours). */
export function clusterOptions(seeds: ClusterSeeds, connectionName: string): ClusterOptions {
  return {
    redisOptions: {
      // BullMQ refuses a cluster whose node connections give up on commands.
      maxRetriesPerRequest: null,
      connectionName,
      ...(seeds.username !== undefined ? { username: seeds.username } : {}),
      ...(seeds.password !== undefined ? { password: seeds.password } : {}),
      ...(seeds.tls ? { tls: {} } : {}),
    },
    // Back off up to 2 s between attempts to reach the cluster again, for ever.
    clusterRetryStrategy: (times) => Math.min(times * 100, 2000),
    // A command that meets a master being failed over (connection closed, CLUSTERDOWN) is retried on the new
    // topology instead of failing at once: up to maxRedirections tries 300 ms apart, about 30 s, which covers a
    // failover with Redis' default cluster-node-timeout of 15 s.
    retryDelayOnFailover: 300,
    retryDelayOnClusterDown: 300,
    maxRedirections: 100,
    // With TLS, connect to the names the nodes announce so that certificates are checked against them (ioredis'
    // advice for managed clusters such as ElastiCache).
    ...(seeds.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
  };
}

/** Where a process connects, for logs and messages: passwords masked, in URLs and in REDIS_CLUSTER_NODES alike. */
export function describeRedisTarget(url: string, clusterNodes?: string): string {
  if (clusterNodes === undefined) return maskUrlPasswords(url);
  return `Redis Cluster via ${clusterNodes
    .split(',')
    .map((entry) => maskUrlPasswords(entry.trim()))
    .join(',')}`;
}
