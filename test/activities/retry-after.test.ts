import { parseRetryAfterMs } from '../../src/activities/retry-after';

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2026-11-29T12:00:00Z');

  it('reads delay-seconds', () => {
    expect(parseRetryAfterMs('120', now)).toBe(120_000);
    expect(parseRetryAfterMs(' 0 ', now)).toBe(0);
  });

  it('reads an HTTP date as the time left until then', () => {
    expect(parseRetryAfterMs('Sun, 29 Nov 2026 12:01:30 GMT', now)).toBe(90_000);
  });

  it('treats a date in the past as "now"', () => {
    expect(parseRetryAfterMs('Sun, 29 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });

  it.each([[null], [undefined], [''], ['soon'], ['-5'], ['1.5'], ['12abc']])(
    'ignores %p',
    (value) => {
      expect(parseRetryAfterMs(value, now)).toBeUndefined();
    },
  );
});
