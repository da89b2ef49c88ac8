import { clientKey, createFailureLimiter } from '../../src/http/rate-limit';

function limiterAt(options: { limit?: number; windowMs?: number; maxClients?: number } = {}) {
  let now = 1_000_000;
  const limiter = createFailureLimiter({
    limit: options.limit ?? 3,
    windowMs: options.windowMs ?? 60_000,
    maxClients: options.maxClients ?? 100,
    now: () => now,
  });
  return { limiter, advance: (ms: number) => (now += ms) };
}

describe('failed-attempt limiter (sliding window per client)', () => {
  it('allows `limit` failures, then refuses until the oldest leaves the window', () => {
    const { limiter, advance } = limiterAt({ limit: 3, windowMs: 60_000 });
    expect(limiter.recordFailure('10.0.0.1')).toBe(false);
    advance(10_000);
    expect(limiter.recordFailure('10.0.0.1')).toBe(false);
    advance(10_000);
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(0);
    expect(limiter.recordFailure('10.0.0.1')).toBe(true);

    // The first failure was 20 s ago: it leaves the window in 40 s.
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(40);
    advance(39_500);
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(1);
    advance(500);
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(0);
    // One attempt freed, not the whole budget: the window slides, it does not reset.
    expect(limiter.recordFailure('10.0.0.1')).toBe(true);
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(10);
  });

  it('never refuses a client that only asks (valid requests are not counted)', () => {
    const { limiter } = limiterAt({ limit: 1 });
    for (let i = 0; i < 10_000; i++) expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(0);
    expect(limiter.trackedClients()).toBe(0);
  });

  it.each([
    ['per client', ['10.0.0.1', '10.0.0.1'], '10.0.0.1', '10.0.0.2'],
    [
      'across an IPv6 /64',
      ['2001:db8:1:2::1', '2001:db8:1:2:ffff:eeee:dddd:cccc'],
      '2001:0db8:0001:0002:0:0:0:9',
      '2001:db8:1:3::1',
    ],
    [
      'between an IPv4 address and its mapped form',
      ['::ffff:198.51.100.7', '198.51.100.7'],
      '198.51.100.7',
      '198.51.100.8',
    ],
  ])('keeps one budget %s', (_label, failures, sameClient, otherClient) => {
    const { limiter } = limiterAt({ limit: 2 });
    for (const ip of failures) limiter.recordFailure(ip);
    expect(limiter.retryAfterSeconds(sameClient)).toBeGreaterThan(0);
    expect(limiter.retryAfterSeconds(otherClient)).toBe(0);
  });

  it('forgets clients whose failures all left the window', () => {
    const { limiter, advance } = limiterAt({ windowMs: 1000 });
    limiter.recordFailure('10.0.0.1');
    advance(1000);
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(0);
    expect(limiter.trackedClients()).toBe(0);
  });

  it('tracks at most maxClients, forgetting the one quiet for longest', () => {
    const { limiter, advance } = limiterAt({ limit: 2, maxClients: 100 });
    limiter.recordFailure('192.0.2.1');
    limiter.recordFailure('192.0.2.1');
    for (let i = 0; i < 5000; i++) {
      advance(1);
      limiter.recordFailure(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
      // A blocked client that keeps failing stays the most recent, so it stays blocked.
      if (i % 50 === 0) limiter.recordFailure('192.0.2.1');
      expect(limiter.trackedClients()).toBeLessThanOrEqual(100);
    }
    expect(limiter.retryAfterSeconds('192.0.2.1')).toBeGreaterThan(0);
    expect(limiter.retryAfterSeconds('10.0.0.0')).toBe(0);
  });

  it('is off with a limit of 0', () => {
    const { limiter } = limiterAt({ limit: 0 });
    for (let i = 0; i < 100; i++) expect(limiter.recordFailure('10.0.0.1')).toBe(false);
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(0);
    expect(limiter.trackedClients()).toBe(0);
  });
});

describe('clientKey', () => {
  it.each([
    ['203.0.113.9', '203.0.113.9'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['::1', '0:0:0:0::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['2001:DB8:a:b:c:d:e:f', '2001:db8:a:b::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.33', '64:ff9b:0:0::/64'],
    ['not-an-ip', 'not-an-ip'],
  ])('%s -> %s', (ip, key) => {
    expect(clientKey(ip)).toBe(key);
  });
});
