import { loadConfig } from '../../src/config';
import { codecEndpointFor, codecEndpointRefusal } from '../../src/codec/data-converter';

/** What production requires anyway (src/config/), so these tests reach the codec rules. */
const productionBasics = {
  TEMPORAL_ADDRESS: 'temporal.internal:7233',
  PAYMENT_WEBHOOK_SECRET: 'a-real-provider-secret-0123456789',
  SMTP_URL: 'smtp://mail.internal:587',
  WAREHOUSE_API_URL: 'https://warehouse.example.com',
};

// The codec endpoint answers browsers from the Web UI's origin only; by default that is wherever
// the configuration says the UI is, so moving the UI never silently breaks decoding.
describe('CODEC_CORS_ORIGINS', () => {
  it("defaults to the embedded Web UI's origins, on TEMPORAL_UI_PORT", () => {
    expect(loadConfig({}).CODEC_CORS_ORIGINS).toEqual([
      'http://localhost:8233',
      'http://127.0.0.1:8233',
    ]);
    expect(loadConfig({ TEMPORAL_UI_PORT: '8900' }).CODEC_CORS_ORIGINS).toEqual([
      'http://localhost:8900',
      'http://127.0.0.1:8900',
    ]);
  });

  it('defaults to the origin of TEMPORAL_UI_URL when that is set', () => {
    expect(
      loadConfig({ TEMPORAL_UI_URL: 'https://temporal.example.com/ui/' }).CODEC_CORS_ORIGINS,
    ).toEqual(['https://temporal.example.com']);
  });

  it('takes an explicit comma-separated list as it is', () => {
    expect(
      loadConfig({
        CODEC_CORS_ORIGINS: ' https://a.example , https://b.example:8443 ',
        TEMPORAL_UI_PORT: '8900',
      }).CODEC_CORS_ORIGINS,
    ).toEqual(['https://a.example', 'https://b.example:8443']);
  });
});

// The endpoint decrypts whatever it is sent, and curl ignores CORS: without a token it may only
// listen on loopback in development.
describe('serving the codec endpoint', () => {
  const key = `k1:${Buffer.alloc(32, 7).toString('base64')}`;

  it('serves it without a token on loopback in development (npm start)', () => {
    const config = loadConfig({ PAYLOAD_ENCRYPTION_KEY: key });
    expect(codecEndpointRefusal(config)).toBeUndefined();
    expect(codecEndpointFor(config)).toMatchObject({ authToken: undefined });
  });

  it.each([
    [
      'in production',
      { NODE_ENV: 'production' },
      /in production the codec endpoint needs CODEC_AUTH_TOKEN/,
    ],
    ['on a public address', { HOST: '0.0.0.0' }, /HOST=0\.0\.0\.0 is not loopback/],
  ])('refuses to serve it without a token %s', (_label, env, reason) => {
    const config = loadConfig({ ...productionBasics, ...env, PAYLOAD_ENCRYPTION_KEY: key });
    expect(codecEndpointRefusal(config)).toMatch(reason);
    expect(codecEndpointFor(config)).toBeUndefined();
  });

  it('serves it anywhere with a token', () => {
    const config = loadConfig({
      ...productionBasics,
      NODE_ENV: 'production',
      HOST: '0.0.0.0',
      PAYLOAD_ENCRYPTION_KEY: key,
      CODEC_AUTH_TOKEN: 'a-long-random-token',
    });
    expect(codecEndpointFor(config)).toMatchObject({ authToken: 'a-long-random-token' });
  });

  it('has nothing to serve without encryption', () => {
    expect(
      codecEndpointFor(loadConfig({ NODE_ENV: 'production', ...productionBasics })),
    ).toBeUndefined();
  });
});
