import { loadConfig } from '../../src/config';

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
