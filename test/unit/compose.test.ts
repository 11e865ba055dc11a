// No Docker engine runs here, so docker-compose.yml is kept honest by checking it against the real scripts,
// configuration schemas and Dockerfile.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ApiEnvSchema, loadApiConfig } from '@mcp-tasks/api/config';
import { loadWorkerConfig, WorkerEnvSchema } from '@mcp-tasks/worker/config';
import { repoRoot } from '../support/processes.ts';

interface Service {
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  deploy?: { replicas?: number };
  healthcheck?: { test: string[] };
  volumes?: string[];
  build?: string;
  depends_on?: unknown;
}

const compose = parse(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const packageJson = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  packageManager: string;
};
const service = (name: string): Service => {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service '${name}'`);
  return found;
};

describe('docker-compose.yml', () => {
  it('runs redis, api, worker and a load balancer', () => {
    expect(Object.keys(compose.services)).to.have.members(['redis', 'api', 'worker', 'lb']);
  });

  it('starts api and worker with the root package scripts that exist', () => {
    expect(service('api').command).to.deep.equal(['pnpm', 'api']);
    expect(service('worker').command).to.deep.equal(['pnpm', 'worker']);
    expect(packageJson.scripts['api']).to.contain('apps/api/src/main.ts');
    expect(packageJson.scripts['worker']).to.contain('apps/worker/src/main.ts');
  });

  it('sets only variables the processes read, with values their config accepts', () => {
    const api = service('api').environment ?? {};
    const worker = service('worker').environment ?? {};
    for (const name of Object.keys(api)) expect(ApiEnvSchema.shape, `api ${name}`).to.have.property(name);
    for (const name of Object.keys(worker)) expect(WorkerEnvSchema.shape, `worker ${name}`).to.have.property(name);
    const apiConfig = loadApiConfig(api);
    expect(apiConfig.HOST).to.equal('0.0.0.0');
    loadWorkerConfig(worker);
    expect(api['REDIS_URL']).to.equal('redis://redis:6379');
    expect(worker['REDIS_URL']).to.equal(api['REDIS_URL']);
  });

  it('scales out: 2 api replicas behind the balancer, 3 workers', () => {
    expect(service('api').deploy?.replicas).to.equal(2);
    expect(service('worker').deploy?.replicas).to.equal(3);
    expect(service('api').ports ?? []).to.be.empty;
  });

  it('balances to the api port and publishes it', () => {
    const apiPort = service('api').environment?.['PORT'];
    const nginx = readFileSync(join(repoRoot, 'deploy', 'nginx.conf'), 'utf8');
    expect(nginx).to.contain(`server api:${apiPort};`);
    expect(nginx).to.match(/proxy_buffering off;/);
    expect(service('lb').ports).to.deep.equal(['3000:80']);
    expect(service('lb').volumes?.[0]).to.match(/^\.\/deploy\/nginx\.conf:/);
  });

  it('keeps Redis durable: AOF on a volume, and a health check the apps wait for', () => {
    const redis = service('redis');
    expect(redis.command?.join(' ')).to.contain('--appendonly yes');
    expect(redis.volumes?.[0]).to.match(/:\/data$/);
    expect(redis.healthcheck?.test).to.include('ping');
    expect(JSON.stringify(service('api').depends_on)).to.contain('service_healthy');
  });

  it('health-checks the api on the readiness endpoint it serves', () => {
    const check = service('api').healthcheck?.test.join(' ') ?? '';
    expect(check).to.contain('/readyz');
    expect(readFileSync(join(repoRoot, 'apps/api/src/app.ts'), 'utf8')).to.contain("'/readyz'");
  });

  it('builds from a Dockerfile on Node 20 that installs every workspace package', () => {
    const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    expect(dockerfile).to.match(/^FROM node:20/m);
    expect(dockerfile).to.contain(`pnpm@${packageJson.packageManager.split('@')[1]}`);
    for (const group of ['apps', 'packages']) {
      for (const name of readdirSync(join(repoRoot, group))) {
        if (!existsSync(join(repoRoot, group, name, 'package.json'))) continue;
        expect(dockerfile, `${group}/${name}`).to.contain(`COPY ${group}/${name}/package.json ${group}/${name}/`);
      }
    }
  });
});
