import { loadConfig } from '../../src/config';

// The SLA thresholds of the scheduled check (src/workflows/sla.ts): a check runs once a minute,
// so an SLA under a minute would only say "late" about work that is merely being done.
describe('FULFILMENT_SLA_SECONDS and PAYMENT_SLA_SECONDS', () => {
  it('default to an hour and five minutes', () => {
    const config = loadConfig({});
    expect(config.FULFILMENT_SLA_SECONDS).toBe(3600);
    expect(config.PAYMENT_SLA_SECONDS).toBe(300);
  });

  it('take seconds from the environment', () => {
    const config = loadConfig({ FULFILMENT_SLA_SECONDS: '7200', PAYMENT_SLA_SECONDS: '60' });
    expect(config.FULFILMENT_SLA_SECONDS).toBe(7200);
    expect(config.PAYMENT_SLA_SECONDS).toBe(60);
  });

  it.each([
    ['FULFILMENT_SLA_SECONDS', '30'],
    ['PAYMENT_SLA_SECONDS', '0'],
    ['PAYMENT_SLA_SECONDS', '5m'],
    ['FULFILMENT_SLA_SECONDS', String(31 * 86_400)],
  ])('refuse %s=%s', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });
});
