// Webhooks without I/O (docs/webhooks.md): the `_meta` form a call names one in, the SSRF rules on addresses, the
// Standard Webhooks signature as the `standardwebhooks` package verifies it, the settings, and the body.
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import {
  ConfigError,
  loadWebhookSettings,
  OutboundTargets,
  parseWebhookSecrets,
  WebhookEnvSchema,
  webhookBody,
  webhookSignature,
} from '@mcp-tasks/engine';
import { InvalidInputError, parseWebhookMeta, RunnerMeta, type TaskRecord } from '@mcp-tasks/protocol';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const OTHER = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

function refusal(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a refusal');
}

async function refusalOf(run: () => Promise<unknown>): Promise<Error | undefined> {
  try {
    await run();
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

describe('webhooks: the _meta form', () => {
  it('takes the URL alone (terminal changes by default) or {url, events}', () => {
    expect(parseWebhookMeta('https://hooks.example.com/t')).to.deep.equal({
      url: 'https://hooks.example.com/t',
      events: 'terminal',
    });
    expect(parseWebhookMeta({ url: 'http://hooks.example.com/t', events: 'all' })).to.deep.equal({
      url: 'http://hooks.example.com/t',
      events: 'all',
    });
  });

  it('refuses with InvalidInputError (-32602) what is not one, saying what to send', () => {
    const cases: [unknown, RegExp][] = [
      [42, /send "https:\/\/\.\.\."/],
      [{ events: 'all' }, /url: /],
      [{ url: 'https://a.example', events: 'some' }, /events: use 'terminal'/],
      [{ url: 'https://a.example', extra: 1 }, /Unrecognized key/],
      ['ftp://a.example/x', /must be http:\/\/ or https:\/\//],
      ['/relative', /not an absolute URL/],
      ['https://user:pw@a.example/x', /must not carry credentials/],
      ['https://a.example/x#frag', /fragment/],
      [`https://a.example/${'x'.repeat(2100)}`, /longer than 2048/],
    ];
    for (const [value, message] of cases) {
      const error = refusal(() => parseWebhookMeta(value));
      expect(error, JSON.stringify(value)).to.be.instanceOf(InvalidInputError);
      expect(error.message).to.include(RunnerMeta.Webhook).and.match(message);
    }
  });
});

describe('webhooks: the SSRF rules on addresses (outbound-targets.ts)', () => {
  const none = OutboundTargets.parse('');
  const check = (targets: OutboundTargets, url: string) => refusalOf(() => targets.check(url, 'webhook'));

  it('refuses loopback, private, link-local and reserved addresses, in every spelling, and names what they are', async () => {
    const refused: [string, RegExp][] = [
      ['http://127.0.0.1:8080/x', /loopback/],
      ['http://127.1/x', /loopback/],
      ['http://2130706433/x', /loopback/],
      ['http://[::1]/x', /loopback/],
      ['http://[::ffff:127.0.0.1]/x', /loopback/],
      ['http://10.1.2.3/x', /private/],
      ['http://172.20.0.1/x', /private/],
      ['http://192.168.1.1/x', /private/],
      ['http://100.64.0.1/x', /private/],
      ['http://[fd00::1]/x', /private/],
      ['http://169.254.169.254/latest/meta-data', /link-local/],
      ['http://[fe80::1]/x', /link-local/],
      ['http://0.0.0.0/x', /unspecified/],
      ['http://[::]/x', /unspecified/],
      ['http://224.0.0.1/x', /multicast/],
      ['http://[64:ff9b::a00:1]/x', /translated/],
    ];
    for (const [url, kind] of refused) {
      const error = await check(none, url);
      expect(error, url).to.be.instanceOf(InvalidInputError);
      expect(error?.message).to.match(kind).and.include('WEBHOOK_ALLOWED_TARGETS');
    }
    expect(await check(none, 'https://93.184.215.14/x')).to.equal(undefined);
    expect(await check(none, 'https://[2606:4700::1111]/x')).to.equal(undefined);
  });

  it('WEBHOOK_ALLOWED_TARGETS allows what it names: an address, a CIDR range, a host:port pair', async () => {
    const allowed = OutboundTargets.parse('127.0.0.1, 10.0.0.0/8 [::1]:9000,192.168.1.5:8443');
    expect(await check(allowed, 'http://127.0.0.1:1234/x')).to.equal(undefined);
    expect(await check(allowed, 'http://10.200.3.4/x')).to.equal(undefined);
    expect(await check(allowed, 'http://[::1]:9000/x')).to.equal(undefined);
    expect(await check(allowed, 'http://[::1]:9001/x')).to.be.instanceOf(InvalidInputError);
    expect(await check(allowed, 'https://192.168.1.5:8443/x')).to.equal(undefined);
    expect(await check(allowed, 'https://192.168.1.5/x')).to.be.instanceOf(InvalidInputError);
    expect(await check(allowed, 'http://172.16.0.1/x')).to.be.instanceOf(InvalidInputError);
  });

  it('refuses an allow-list entry it cannot read, with a ConfigError that shows the forms it takes', () => {
    for (const entry of ['10.0.0.0/33', 'host:99999', 'a_b.example', '::1/200']) {
      const error = refusal(() => OutboundTargets.parse(entry));
      expect(error, entry).to.be.instanceOf(ConfigError);
      expect(error.message).to.include('WEBHOOK_ALLOWED_TARGETS').and.include('CIDR');
    }
  });
});

describe('webhooks: Standard Webhooks signatures', () => {
  const body = JSON.stringify({ taskId: 't-1', status: 'completed' });

  it('a delivery signed with node:crypto verifies with the standardwebhooks package', () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'webhook-id': 't-1_1700000000000',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': webhookSignature(parseWebhookSecrets(SECRET), 't-1_1700000000000', timestamp, body),
    };
    expect(new Webhook(SECRET).verify(body, headers)).to.deep.equal(JSON.parse(body));
    expect(() => new Webhook(OTHER).verify(body, headers)).to.throw(/No matching signature/);
    expect(() => new Webhook(SECRET).verify(`${body} `, headers)).to.throw(/No matching signature/);
  });

  it('while secrets rotate (several in WEBHOOK_SECRET), each signs: receivers with either verify', () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = webhookSignature(parseWebhookSecrets(`${SECRET} ${OTHER}`), 'id-1', timestamp, body);
    expect(signature.split(' ')).to.have.length(2);
    const headers = { 'webhook-id': 'id-1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
    for (const secret of [SECRET, OTHER]) expect(new Webhook(secret).verify(body, headers)).to.be.an('object');
  });

  it('refuses a secret that is not whsec_<base64 of 24 to 64 bytes>, without quoting it', () => {
    for (const bad of ['plain-secret-of-enough-length', 'whsec_c2hvcnQ=', `whsec_${'A'.repeat(200)}`, 'whsec_$$$$']) {
      const error = refusal(() => parseWebhookSecrets(bad));
      expect(error.message, bad).to.match(/whsec_/);
      expect(error.message).not.to.include(bad.slice(6, 20));
    }
  });
});

describe('webhooks: settings', () => {
  const env = (values: Record<string, string>) => WebhookEnvSchema.parse(values);

  it('per principal: a webhook and a secret of its own; the inline entry wins over the file’s; the deployment secret for the others', () => {
    const file = JSON.stringify({
      'principal:key:alice': { url: 'https://file.example/a' },
      'principal:key:bob': { url: 'https://file.example/b', events: 'all', secret: OTHER },
    });
    const settings = loadWebhookSettings(
      env({
        WEBHOOK_SECRET: SECRET,
        WEBHOOKS_FILE: '/etc/webhooks.json',
        WEBHOOKS_BY_PRINCIPAL: JSON.stringify({ 'principal:key:alice': { url: 'https://inline.example/a' } }),
      }),
      () => file,
    );
    expect(settings.configuredFor('principal:key:alice')).to.deep.equal({
      url: 'https://inline.example/a',
      events: 'terminal',
    });
    expect(settings.configuredFor('principal:key:bob')).to.deep.equal({ url: 'https://file.example/b', events: 'all' });
    expect(settings.configuredFor('principal:key:carol')).to.equal(undefined);
    expect(settings.keysFor('principal:key:bob')).to.deep.equal(parseWebhookSecrets(OTHER));
    expect(settings.keysFor('principal:key:carol')).to.deep.equal(parseWebhookSecrets(SECRET));
    expect(settings.enabled).to.equal(true);
    expect(loadWebhookSettings(env({})).enabled).to.equal(false);
  });

  it('refuses entries that name no principal, and bad secrets, without showing the secret', () => {
    const bare = refusal(() =>
      loadWebhookSettings(env({ WEBHOOKS_BY_PRINCIPAL: JSON.stringify({ alice: { url: 'https://a.example' } }) })),
    );
    expect(bare).to.be.instanceOf(ConfigError);
    expect(bare.message).to.match(/principal:key:<name>/);
    const secret = 'whsec_dGhpcy1pcy1ub3QtbG9uZw==';
    const weak = refusal(() =>
      loadWebhookSettings(env({ WEBHOOKS_BY_PRINCIPAL: JSON.stringify({ 'principal:key:a': { secret } }) })),
    );
    expect(weak.message).to.include('WEBHOOKS_BY_PRINCIPAL["principal:key:a"].secret');
    expect(weak.message).not.to.include(secret);
    const notJson = refusal(() => loadWebhookSettings(env({ WEBHOOKS_BY_PRINCIPAL: `{"p": "${SECRET}` })));
    expect(notJson.message).to.match(/^WEBHOOKS_BY_PRINCIPAL: not JSON/);
    expect(notJson.message).not.to.include(SECRET.slice(6));
  });
});

describe('webhooks: the body', () => {
  const record: TaskRecord = {
    taskId: 't-1',
    kind: 'task',
    status: 'completed',
    statusMessage: 'done',
    createdAt: Date.parse('2026-01-01T00:00:00Z'),
    lastUpdatedAt: Date.parse('2026-01-01T00:00:05Z'),
    ttl: 60_000,
    pollInterval: 1000,
    owner: 'principal:key:alice',
    sessionId: 's',
    tool: 'echo',
    outcome: { result: { content: [{ type: 'text', text: 'x'.repeat(2000) }] } },
    webhook: { url: 'https://a.example', events: 'all' },
  };

  it('is the task as 2026-07-28 tasks/get renders it, with the status, time and message of the change it carries', () => {
    const change = { status: record.status, at: record.lastUpdatedAt, statusMessage: 'done' };
    const done = JSON.parse(webhookBody(record, change, {}, 1_000_000)) as Record<string, unknown>;
    expect(done).to.deep.include({
      resultType: 'complete',
      taskId: 't-1',
      status: 'completed',
      statusMessage: 'done',
      lastUpdatedAt: '2026-01-01T00:00:05.000Z',
      ttlMs: 60_000,
    });
    expect(done['result']).to.deep.equal({
      resultType: 'complete',
      content: [{ type: 'text', text: 'x'.repeat(2000) }],
    });
    // An earlier change of a task that has ended since: its own status, no result.
    const earlier = JSON.parse(
      webhookBody(record, { status: 'working', at: record.createdAt + 1, statusMessage: 'started' }, {}, 1_000_000),
    ) as Record<string, unknown>;
    expect(earlier).to.deep.include({ status: 'working', statusMessage: 'started' });
    expect(earlier).not.to.have.property('result');
  });

  it('past WEBHOOK_MAX_BODY_BYTES leaves the result out and says so in _meta', () => {
    const change = { status: record.status, at: record.lastUpdatedAt };
    const body = JSON.parse(webhookBody(record, change, {}, 1024)) as Record<string, unknown>;
    expect(body).not.to.have.property('result');
    expect(body['status']).to.equal('completed');
    const omitted = (body['_meta'] as Record<string, { bytes: number }>)[RunnerMeta.ResultOmitted];
    expect(omitted?.bytes).to.be.greaterThan(2000);
  });
});
