import { expect } from 'chai';
import { freePort, portRange } from '../../scripts/lib/ports.ts';

describe('free ports for tests and scripts (scripts/lib/ports.ts)', () => {
  const saved = process.env['MCPT_PORT_RANGE'];
  afterEach(() => {
    if (saved === undefined) delete process.env['MCPT_PORT_RANGE'];
    else process.env['MCPT_PORT_RANGE'] = saved;
  });

  it('MCPT_PORT_RANGE keeps every port in the range and never hands one out twice (test shards side by side)', async () => {
    process.env['MCPT_PORT_RANGE'] = '18000-18009';
    const ports = await Promise.all(Array.from({ length: 10 }, () => freePort()));
    expect(new Set(ports).size).to.equal(10);
    for (const port of ports) expect(port).to.be.within(18000, 18009);
    await freePort().then(
      () => expect.fail('the range is spent'),
      (error: Error) => expect(error.message).to.match(/MCPT_PORT_RANGE 18000-18009: no free port left/),
    );
  });

  it('a malformed MCPT_PORT_RANGE is an error naming the setting; unset, the OS picks', async () => {
    expect(portRange(undefined)).to.equal(undefined);
    expect(portRange('10000-10999')).to.deep.equal([10000, 10999]);
    for (const bad of ['10', '2000-1000', '80-90', '60000-70000', 'a-b']) {
      expect(() => portRange(bad)).to.throw(/MCPT_PORT_RANGE must be "low-high"/);
    }
    delete process.env['MCPT_PORT_RANGE'];
    expect(await freePort()).to.be.within(1024, 65535);
  });
});
