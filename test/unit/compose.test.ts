// No Docker engine runs here, so docker-compose.yml is kept honest by checking it against the real scripts,
// configuration schemas, Dockerfile and nginx.conf.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ApiEnvSchema, loadApiConfig } from '@mcp-tasks/api/config';
import { loadWorkerConfig, WorkerEnvSchema } from '@mcp-tasks/worker';
import { repoRoot } from '../support/processes.ts';

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  deploy?: { replicas?: number };
  healthcheck?: { test: string[] };
  volumes?: string[];
  build?: string;
  depends_on?: Record<string, { condition?: string }>;
  restart?: string;
  init?: boolean;
  stop_grace_period?: string;
}

const read = (...path: string[]) => readFileSync(join(repoRoot, ...path), 'utf8');
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
const packageJson = JSON.parse(read('package.json')) as { scripts: Record<string, string>; packageManager: string };
const dockerfile = read('Dockerfile');
const nginx = read('deploy', 'nginx.conf');
const service = (name: string): Service => {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service '${name}'`);
  return found;
};

/** Every TypeScript file of a source folder, concatenated (to find the routes an app serves). */
function sourceOf(folder: string): string {
  return readdirSync(join(repoRoot, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => read(folder, file))
    .join('\n');
}

function seconds(duration: string | undefined): number {
  const match = /^(\d+)(ms|s|m)$/.exec(duration ?? '');
  if (!match) throw new Error(`unreadable duration '${duration}'`);
  return Number(match[1]) * { ms: 0.001, s: 1, m: 60 }[match[2] as 'ms' | 's' | 'm'];
}

function bytes(size: string): number {
  const match = /^(\d+)([kmg]?)$/i.exec(size);
  if (!match) throw new Error(`unreadable size '${size}'`);
  return Number(match[1]) * { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(match[2] ?? '').toLowerCase() as ''];
}

describe('docker-compose.yml', () => {
  it('runs redis, api, worker and a load balancer, each restarted when it dies', () => {
    expect(Object.keys(compose.services)).to.have.members(['redis', 'api', 'worker', 'lb']);
    for (const [name, { restart }] of Object.entries(compose.services)) {
      expect(restart, name).to.equal('unless-stopped');
    }
  });

  it('starts api and worker as the mcpt commands of the installed package, behind an init', () => {
    // The entrypoint is the package's bin, which is node itself (no pnpm or sh in between to swallow SIGTERM).
    expect(dockerfile).to.contain('ENTRYPOINT ["/app/node_modules/.bin/mcpt"]');
    expect(dockerfile).to.contain('CMD ["api"]');
    const runner = JSON.parse(read('apps', 'runner', 'package.json')) as {
      name: string;
      publishConfig: { bin: Record<string, string> };
    };
    expect(runner.name).to.equal('mcp-task-runner');
    // Published only: in the workspace dist/mcpt.js does not exist before a build (issue 31).
    expect(runner.publishConfig.bin['mcpt']).to.equal('./dist/mcpt.js');
    const bin = read('apps', 'runner', 'src', 'mcpt.ts');
    expect(bin.startsWith('#!/usr/bin/env node')).to.equal(true);
    expect(service('api').command).to.deep.equal(['api']);
    expect(service('worker').command).to.deep.equal(['worker']);
    for (const command of ['api', 'worker']) expect(bin).to.contain(`command === '${command}'`);
    expect(service('api').init).to.equal(true);
    expect(service('worker').init).to.equal(true);
  });

  it('sets only variables the processes read, with values their config accepts', () => {
    const api = service('api').environment ?? {};
    const worker = service('worker').environment ?? {};
    for (const name of Object.keys(api)) expect(ApiEnvSchema.shape, `api ${name}`).to.have.property(name);
    for (const name of Object.keys(worker)) expect(WorkerEnvSchema.shape, `worker ${name}`).to.have.property(name);
    const apiConfig = loadApiConfig(api);
    expect(apiConfig.HOST).to.equal('0.0.0.0');
    expect(apiConfig.ALLOWED_ORIGINS).to.include('http://localhost:3000');
    loadWorkerConfig(worker);
    expect(api['REDIS_URL']).to.equal('redis://redis:6379');
    expect(worker['REDIS_URL']).to.equal(api['REDIS_URL']);
  });

  it('scales out: 2 api replicas behind the balancer, 3 workers', () => {
    expect(service('api').deploy?.replicas).to.equal(2);
    expect(service('worker').deploy?.replicas).to.equal(3);
    expect(service('api').ports ?? []).to.be.empty;
  });

  it('balances to the api port, following replicas through DNS, and publishes it', () => {
    const apiPort = service('api').environment?.['PORT'];
    expect(nginx).to.contain(`server api:${apiPort} resolve;`);
    // `resolve` needs a shared-memory zone in the upstream, a resolver, and nginx 1.27.3 or later.
    expect(/upstream mcp_api \{[^}]*zone mcp_api \d+k;/.exec(nginx)).to.not.equal(null);
    expect(nginx).to.match(/^resolver 127\.0\.0\.11 /m);
    const [, major, minor] = /^nginx:(\d+)\.(\d+)-alpine$/.exec(service('lb').image ?? '') ?? [];
    expect(Number(major) * 1000 + Number(minor), 'nginx version').to.be.at.least(1028);
    expect(nginx).to.match(/proxy_buffering off;/);
    // /metrics has no token: the balancer keeps it inside (scraped per replica).
    // Whatever the case or a trailing part (/METRICS, /metrics/): test/integration/security.test.ts runs nginx on it.
    expect(nginx).to.match(/location ~\* \^\/metrics\(\/\|\$\) \{\s*return 404;\s*\}/);
    expect(service('lb').ports).to.deep.equal(['3000:80']);
    expect(service('lb').volumes?.[0]).to.match(/^\.\/deploy\/nginx\.conf:/);
    expect(service('lb').depends_on?.['api']?.condition).to.equal('service_healthy');
  });

  it("lets an oversized body reach the api, so the client gets the api's JSON-RPC 413 and not nginx's page", () => {
    const limit = /client_max_body_size (\w+);/.exec(nginx)?.[1] ?? '0';
    const apiLimit = loadApiConfig(service('api').environment ?? {}).MAX_BODY_BYTES;
    expect(bytes(limit)).to.be.above(apiLimit);
  });

  it('keeps Redis durable: AOF fsynced every second on a volume, no eviction, a health check the apps wait for', () => {
    const redis = service('redis');
    const command = redis.command?.join(' ') ?? '';
    expect(command).to.contain('--appendonly yes').and.contain('--appendfsync everysec');
    expect(command).to.contain('--maxmemory-policy noeviction');
    expect(redis.volumes?.[0]).to.match(/:\/data$/);
    expect(redis.healthcheck?.test).to.include('ping');
    expect(service('api').depends_on?.['redis']?.condition).to.equal('service_healthy');
    expect(service('worker').depends_on?.['redis']?.condition).to.equal('service_healthy');
  });

  it('health-checks the api on the readiness endpoint it serves', () => {
    const check = service('api').healthcheck?.test.join(' ') ?? '';
    expect(check).to.contain(`http://127.0.0.1:${service('api').environment?.['PORT']}/readyz`);
    expect(sourceOf('apps/api/src')).to.contain("'/readyz'");
  });

  it('health-checks each worker on the /healthz of its metrics listener', () => {
    const worker = service('worker');
    const port = worker.environment?.['WORKER_METRICS_PORT'];
    expect(loadWorkerConfig(worker.environment ?? {}).WORKER_METRICS_PORT).to.equal(Number(port));
    expect(worker.healthcheck?.test.join(' ')).to.contain(`http://127.0.0.1:${port}/healthz`);
    expect(sourceOf('apps/worker/src')).to.contain("'/healthz'");
  });

  it('gives a stopping worker longer than its grace period before SIGKILL', () => {
    const worker = service('worker');
    const graceMs = loadWorkerConfig(worker.environment ?? {}).WORKER_SHUTDOWN_GRACE_MS;
    expect(seconds(worker.stop_grace_period) * 1000).to.be.above(graceMs);
  });

  it('builds from a Dockerfile on Node 22 that installs exactly the workspace packages, then the packed runner (issue 31)', () => {
    // Every stage on the Node line the published package admits (publishConfig.engines: >=22.15.0).
    const stages = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1]);
    expect(stages).to.deep.equal(['node:22-bookworm-slim', 'node:22-bookworm-slim']);
    expect(dockerfile).to.match(/npm install --omit=dev .*mcp-task-runner-\*\.tgz zod@/);
    expect(dockerfile).to.contain(`pnpm@${packageJson.packageManager.split('@')[1]}`);
    const packages: string[] = [];
    for (const group of ['apps', 'packages']) {
      for (const name of readdirSync(join(repoRoot, group))) {
        if (existsSync(join(repoRoot, group, name, 'package.json'))) packages.push(`${group}/${name}`);
      }
    }
    const copied = [...dockerfile.matchAll(/^COPY ((?:apps|packages)\/[^/]+)\/package\.json \1\/$/gm)].map((m) => m[1]);
    expect(copied).to.have.members(packages);
  });
});
