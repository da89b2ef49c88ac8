import { ConfigError, loadConfig } from '../../src/config';

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const production = {
  NODE_ENV: 'production',
  PAYMENT_WEBHOOK_SECRET: 'a-real-secret-0123456789',
};

describe('webhook security configuration', () => {
  it('defaults to the contract: plain scheme, no previous secret, 20 failures a minute', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      WEBHOOK_SIGNATURE_SCHEME: 'plain',
      WEBHOOK_TOLERANCE_SECONDS: 300,
      WEBHOOK_AUTH_FAILURE_LIMIT: 20,
      WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS: 60,
      WEBHOOK_AUTH_FAILURE_MAX_CLIENTS: 10_000,
      HTTP_TRUST_PROXY: false,
    });
    expect(config.PAYMENT_WEBHOOK_SECRET_PREVIOUS).toBeUndefined();
  });

  it('reads every setting', () => {
    const config = loadConfig({
      PAYMENT_WEBHOOK_SECRET_PREVIOUS: ' old-secret ',
      WEBHOOK_SIGNATURE_SCHEME: 'timestamped',
      WEBHOOK_TOLERANCE_SECONDS: '120',
      WEBHOOK_AUTH_FAILURE_LIMIT: '0',
      WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS: '600',
      WEBHOOK_AUTH_FAILURE_MAX_CLIENTS: '500',
      HTTP_TRUST_PROXY: '2',
    });
    expect(config).toMatchObject({
      PAYMENT_WEBHOOK_SECRET_PREVIOUS: 'old-secret',
      WEBHOOK_SIGNATURE_SCHEME: 'timestamped',
      WEBHOOK_TOLERANCE_SECONDS: 120,
      WEBHOOK_AUTH_FAILURE_LIMIT: 0,
      WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS: 600,
      WEBHOOK_AUTH_FAILURE_MAX_CLIENTS: 500,
      HTTP_TRUST_PROXY: 2,
    });
  });

  it.each([
    ['', false],
    ['0', false],
    ['1', 1],
    ['10.0.0.0/8, 127.0.0.1', ['10.0.0.0/8', '127.0.0.1']],
    ['::1,fd00::/8', ['::1', 'fd00::/8']],
  ])('reads HTTP_TRUST_PROXY=%j', (value, expected) => {
    expect(loadConfig({ HTTP_TRUST_PROXY: value }).HTTP_TRUST_PROXY).toEqual(expected);
  });

  it.each([
    ['WEBHOOK_SIGNATURE_SCHEME', 'hmac', /plain .* or timestamped/],
    ['WEBHOOK_TOLERANCE_SECONDS', '0', /too small|>=/i],
    ['WEBHOOK_TOLERANCE_SECONDS', '86400', /at most 3600/],
    ['WEBHOOK_AUTH_FAILURE_LIMIT', '-1', /too small|>=/i],
    ['WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS', 'soon', /number/i],
    ['WEBHOOK_AUTH_FAILURE_MAX_CLIENTS', '10', /too small|>=/i],
    ['HTTP_TRUST_PROXY', 'true', /hop count/],
    ['HTTP_TRUST_PROXY', '10.0.0.0/33', /hop count/],
    ['HTTP_TRUST_PROXY', 'proxy.internal', /hop count/],
  ])('refuses %s=%j with a message naming it', (name, value, message) => {
    const problems = problemsOf({ [name]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`^${name}: `));
    expect(problems[0]).toMatch(message);
  });

  it('refuses a previous secret equal to the current one', () => {
    expect(
      problemsOf({
        PAYMENT_WEBHOOK_SECRET: 'same-secret',
        PAYMENT_WEBHOOK_SECRET_PREVIOUS: 'same-secret',
      }),
    ).toEqual([expect.stringMatching(/^PAYMENT_WEBHOOK_SECRET_PREVIOUS: equals/)]);
  });

  it('refuses a weak or public previous secret in production', () => {
    // Only this variable's problems: other production rules are not this test's business.
    const previousProblems = (value: string) =>
      problemsOf({ ...production, PAYMENT_WEBHOOK_SECRET_PREVIOUS: value }).filter((p) =>
        p.startsWith('PAYMENT_WEBHOOK_SECRET_PREVIOUS:'),
      );
    expect(previousProblems('short')).toEqual([
      expect.stringMatching(/^PAYMENT_WEBHOOK_SECRET_PREVIOUS: .*16\+ characters/),
    ]);
    expect(previousProblems('dev-webhook-secret')).toHaveLength(1);
    expect(previousProblems('the-old-real-secret-0123')).toEqual([]);
    // Outside production any previous secret will do, as any current one does.
    expect(problemsOf({ PAYMENT_WEBHOOK_SECRET_PREVIOUS: 'short' })).toEqual([]);
  });
});
