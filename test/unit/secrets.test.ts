// Secrets stay out of start-up errors (issue 14, item 10): a rejected value of a credential variable is named, not
// echoed, and passwords in URLs are masked, in every process's configuration.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { createAuthenticator } from '@mcp-tasks/api/auth';
import { loadApiConfig } from '@mcp-tasks/api/config';
import { loadCliConfig } from '@mcp-tasks/cli/config';
import {
  isSecretVariable,
  isSessionOwnerLabel,
  maskUrlPasswords,
  ownerLabel,
  redactSessionFields,
  sessionDigest,
} from '@mcp-tasks/engine';
import { loadWorkerConfig } from '@mcp-tasks/worker';
import { configError } from '../support/config-error.ts';

describe('secrets in configuration errors', () => {
  it('a rejected ADMIN_TOKEN, AUTH_JWT_SECRET, CALLBACK_SECRET or METRICS_TOKEN is named with its rule, never echoed', () => {
    const env = {
      ADMIN_TOKEN: 'tok-0123456',
      METRICS_TOKEN: 'metrics-01234',
      AUTH_JWT_SECRET: 'jwt-secret-0123456789',
      CALLBACK_SECRET: 'callback-secret-012345',
    };
    const message = configError(() => loadApiConfig(env));
    for (const [name, value] of Object.entries(env)) {
      expect(message).to.contain(`${name} (value hidden, ${value.length} characters)`);
      expect(message).to.not.contain(value);
    }
    expect(message).to.match(/ADMIN_TOKEN .*: use at least 16 characters/);
    expect(message).to.match(/AUTH_JWT_SECRET .*: an HS256 secret needs at least 32 characters/);
    const worker = configError(() => loadWorkerConfig({ CALLBACK_SECRET: 'worker-callback-secret' }));
    expect(worker).to.contain('CALLBACK_SECRET (value hidden').and.not.contain('worker-callback-secret');
  });

  it('passwords in REDIS_URL and REDIS_CLUSTER_NODES are masked in every process', () => {
    const both = { REDIS_URL: 'redis://app:url-password-1@redis:6379', REDIS_CLUSTER_NODES: 'n1:6380' };
    const badNode = { REDIS_CLUSTER_NODES: 'rediss://:nodes-password-2@n1:6380/3,n2:6380' };
    for (const load of [loadApiConfig, loadWorkerConfig, loadCliConfig]) {
      const message = configError(() => load(both));
      expect(message).to.contain('REDIS_URL="redis://app:***@redis:6379": set either REDIS_URL');
      const node = configError(() => load(badNode));
      expect(node).to.contain("'rediss://:***@n1:6380/3': a Redis Cluster has only database 0");
      expect(message + node).to.not.match(/url-password-1|nodes-password-2/);
    }
  });

  it('AUTH_API_KEYS errors name the entry by position, not by its text', () => {
    const swapped = `${'k'.repeat(20)}:alice`;
    const bare = 'bare-key-without-a-name-0123';
    for (const [value, rule] of [
      [swapped, /entry 1 .*shorter than 16 characters/],
      [`alice:${'a'.repeat(20)},${bare}`, /entry 2 is not principal:key/],
    ] as const) {
      const message = configError(() =>
        createAuthenticator({ AUTH_API_KEYS: value, AUTH_JWT_MAX_LIFETIME_MS: 60_000 }),
      );
      expect(message).to.match(rule);
      expect(message).to.not.contain('kkkk').and.not.contain(bare);
    }
  });

  it('knows which variables are credentials and masks URL passwords anywhere in a text', () => {
    for (const name of ['ADMIN_TOKEN', 'AUTH_JWT_SECRET', 'CALLBACK_SECRET', 'METRICS_TOKEN', 'AUTH_API_KEYS']) {
      expect(isSecretVariable(name), name).to.equal(true);
    }
    for (const name of ['AUTH_API_KEYS_FILE', 'REDIS_URL', 'HOST', 'MAX_TASKS_PER_OWNER']) {
      expect(isSecretVariable(name), name).to.equal(false);
    }
    expect(maskUrlPasswords("at 'redis://u:p@h:1' and rediss://:x%2Cy@h2, http://h3/")).to.equal(
      "at 'redis://u:***@h:1' and rediss://:***@h2, http://h3/",
    );
  });
});

describe('session ids in log records', () => {
  const id = '6ffdb70f-df0a-40b6-b10c-2196b0c1d2e3';

  it('T-SEC-2: without authentication, sessionId and session owners are logged as a 64-bit SHA-256 digest', () => {
    expect(sessionDigest(id)).to.match(/^sha256:[0-9a-f]{16}$/);
    expect(
      redactSessionFields({ sessionId: id, principal: `session:${id}`, owner: `session:${id}` }, true),
    ).to.deep.equal({
      sessionId: sessionDigest(id),
      principal: `session:${sessionDigest(id)}`,
      owner: `session:${sessionDigest(id)}`,
    });
  });

  it('with authentication, the session id stays (it is not a credential there); principals are untouched', () => {
    const record = { sessionId: id, principal: 'principal:key:alice', owner: 'principal:jwt:https://idp|alice' };
    expect(redactSessionFields({ ...record }, false)).to.deep.equal(record);
  });
});

describe("owners in operators' views (ownerLabel: the dashboard, /metrics labels, the CLI, logs)", () => {
  const id = '6ffdb70f-df0a-40b6-b10c-2196b0c1d2e3';

  it('T-SEC-2: a session owner is shown as the digest of its id, the same one log lines carry, which an operator can compute', () => {
    const label = ownerLabel(`session:${id}`);
    expect(label).to.equal(`session:${sessionDigest(id)}`);
    expect(label).to.equal(`session:sha256:${createHash('sha256').update(id).digest('hex').slice(0, 16)}`);
    expect(label).not.to.contain(id);
    expect(isSessionOwnerLabel(label)).to.equal(true);
    // Labelled twice, still the same label (a view built from labelled data).
    expect(ownerLabel(label)).to.equal(label);
    expect(redactSessionFields({ owner: label }, true)).to.deep.equal({ owner: label });
  });

  it('principals (names an operator configured or an identity provider issued) and client addresses stay readable', () => {
    for (const owner of ['principal:key:alice', 'principal:jwt:https://idp.example.com|alice', 'anonymous:10.0.0.7']) {
      expect(ownerLabel(owner)).to.equal(owner);
      expect(isSessionOwnerLabel(owner)).to.equal(false);
    }
    expect(isSessionOwnerLabel(`session:${id}`)).to.equal(false);
  });
});
