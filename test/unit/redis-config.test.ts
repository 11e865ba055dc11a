// Where the runner's Redis is and the Redis Cluster rules: REDIS_CLUSTER_NODES parsing, the hash-tag prefix, and
// the options every cluster client gets.
import { expect } from 'chai';
import { loadApiConfig } from '@mcp-tasks/api/config';
import {
  clusterOptions,
  describeRedisTarget,
  hashTagOf,
  KeySpace,
  parseClusterNodes,
  prefixPinsOneSlot,
  TaskKeys,
  type ClusterSeeds,
} from '@mcp-tasks/engine';
import { loadWorkerConfig } from '@mcp-tasks/worker';
import { configError } from '../support/config-error.ts';

const NODES = '10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000';

describe('REDIS_CLUSTER_NODES', () => {
  it('takes host:port entries, trimmed, IPv6 in brackets', () => {
    expect(parseClusterNodes(' redis-1:7000, 10.0.0.2:7001 ,[::1]:7002')).to.deep.equal({
      nodes: [
        { host: 'redis-1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      tls: false,
    });
  });

  it('takes credentials and TLS from redis:// or rediss:// entries and applies them to bare ones', () => {
    const seeds = parseClusterNodes('rediss://app:p%40ss%2Cword@node-1:6380,node-2:6380');
    expect(seeds).to.deep.equal({
      nodes: [
        { host: 'node-1', port: 6380 },
        { host: 'node-2', port: 6380 },
      ],
      username: 'app',
      password: 'p@ss,word',
      tls: true,
    });
    expect(parseClusterNodes('redis://:secret@a').nodes).to.deep.equal([{ host: 'a', port: 6379 }]);
  });

  it('rejects what it cannot use, saying why', () => {
    expect(() => parseClusterNodes('')).to.throw(/at least one node/);
    expect(() => parseClusterNodes('node-1')).to.throw(/no port/);
    expect(() => parseClusterNodes('http://node-1:80')).to.throw(/only redis:\/\/ and rediss:\/\//);
    expect(() => parseClusterNodes('redis://a:1,rediss://b:2')).to.throw(/same scheme/);
    expect(() => parseClusterNodes('redis://:x@a:1,redis://:y@b:2')).to.throw(/different credentials/);
    expect(() => parseClusterNodes('redis://a:1/2')).to.throw(/only database 0/);
  });
});

describe('describing the Redis target for logs', () => {
  it('masks passwords in REDIS_URL and in REDIS_CLUSTER_NODES', () => {
    expect(describeRedisTarget('redis://app:s3cret@redis:6379/0')).to.equal('redis://app:***@redis:6379/0');
    expect(describeRedisTarget('redis://redis:6379')).to.equal('redis://redis:6379');
    expect(describeRedisTarget('', 'rediss://:s3cret@n1:6380, n2:6380')).to.equal(
      'Redis Cluster via rediss://:***@n1:6380,n2:6380',
    );
  });
});

describe('the key prefix in Redis Cluster mode', () => {
  it('knows a hash tag as Redis does: the first {...}, not empty', () => {
    expect(hashTagOf('{mcpt}:task:1')).to.equal('mcpt');
    expect(hashTagOf('mcpt:task:{x}')).to.equal('x');
    expect(hashTagOf('{}:task:{x}')).to.equal(undefined);
    expect(hashTagOf('mcpt:task:1')).to.equal(undefined);
    expect(prefixPinsOneSlot('{mcpt}')).to.equal(true);
    expect(prefixPinsOneSlot('mcpt')).to.equal(false);
  });

  it('every key and channel KeySpace and TaskKeys build carries the prefix, so all of them share its hash tag and slot', () => {
    const keys = new KeySpace('{tag}');
    for (const space of [keys, new TaskKeys(keys)]) {
      const prototype = Object.getPrototypeOf(space) as object;
      const builders = Object.getOwnPropertyNames(prototype).filter((name) => name !== 'constructor');
      expect(builders.length).to.be.above(5);
      for (const name of builders) {
        const build = (space as unknown as Record<string, (...args: string[]) => string>)[name];
        const key = build?.call(space, 'a{b}', 'c', 'd');
        expect(key, name)
          .to.be.a('string')
          .and.satisfy((k: string) => k.startsWith('{tag}:'));
        expect(hashTagOf(String(key)), name).to.equal('tag');
      }
    }
  });

  it('defaults to {mcpt} in cluster mode and stays mcpt on one server', () => {
    expect(loadApiConfig({ REDIS_CLUSTER_NODES: NODES }).REDIS_PREFIX).to.equal('{mcpt}');
    expect(loadWorkerConfig({ REDIS_CLUSTER_NODES: NODES }).REDIS_PREFIX).to.equal('{mcpt}');
    expect(loadApiConfig({}).REDIS_PREFIX).to.equal('mcpt');
    expect(loadApiConfig({ REDIS_CLUSTER_NODES: NODES, REDIS_PREFIX: '{tenant-a}' }).REDIS_PREFIX).to.equal(
      '{tenant-a}',
    );
  });

  it('refuses a prefix without a hash tag in cluster mode, naming the variable and the fix', () => {
    const message = configError(() => loadWorkerConfig({ REDIS_CLUSTER_NODES: NODES, REDIS_PREFIX: 'jobs' }));
    expect(message).to.contain('REDIS_PREFIX="jobs"').and.contain('REDIS_PREFIX={jobs}');
  });

  it('refuses REDIS_URL and REDIS_CLUSTER_NODES together, and a malformed node list', () => {
    expect(
      configError(() => loadApiConfig({ REDIS_CLUSTER_NODES: NODES, REDIS_URL: 'redis://10.0.0.9:6379' })),
    ).to.contain('REDIS_URL="redis://10.0.0.9:6379": set either REDIS_URL');
    expect(configError(() => loadApiConfig({ REDIS_CLUSTER_NODES: 'node-1' }))).to.match(
      /REDIS_CLUSTER_NODES="node-1": 'node-1' has no port/,
    );
  });
});

describe('cluster client options', () => {
  const seeds: ClusterSeeds = { nodes: [{ host: 'n', port: 1 }], tls: false };

  it('never gives up a command (BullMQ needs maxRetriesPerRequest: null on the node connections)', () => {
    const options = clusterOptions(seeds, 'mcpt-api');
    expect(options.redisOptions?.maxRetriesPerRequest).to.equal(null);
    expect(options.redisOptions?.connectionName).to.equal('mcpt-api');
    expect(options.redisOptions).to.not.have.any.keys('password', 'username', 'tls');
  });

  it('retries through a failover for longer than a default cluster-node-timeout (15 s)', () => {
    const options = clusterOptions(seeds, 'x');
    expect((options.retryDelayOnFailover ?? 0) * (options.maxRedirections ?? 0)).to.be.at.least(20_000);
    expect((options.retryDelayOnClusterDown ?? 0) * (options.maxRedirections ?? 0)).to.be.at.least(20_000);
    expect(options.clusterRetryStrategy?.(1000)).to.equal(2000);
  });

  it('passes credentials and TLS to every node, keeping announced host names for certificate checks', () => {
    const options = clusterOptions({ ...seeds, username: 'u', password: 'p', tls: true }, 'x');
    expect(options.redisOptions).to.include({ username: 'u', password: 'p' });
    expect(options.redisOptions?.tls).to.deep.equal({});
    let resolved: string | undefined;
    options.dnsLookup?.('node-1.cache.example', (_error, address) => (resolved = address));
    expect(resolved).to.equal('node-1.cache.example');
  });
});
