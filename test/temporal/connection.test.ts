import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { inspect } from 'node:util';
import { ConfigError, loadConfig } from '../../src/config';
import { clientConnectionOptions, nativeConnectionOptions } from '../../src/temporal/connection';
import { createPki, type Leaf, type Pki } from '../../harness/certificates';

// Connection settings as the Temporal CLI reads them (temporal.toml profiles, TEMPORAL_* variables),
// checked at start-up: each bad value stops loadConfig with a message naming it, and no secret
// ever shows in a message, a log line or an inspected config.
let pki: Pki;
let ca: { certPath: string; certPem: string };
let client: Leaf;
let otherClient: Leaf;
let expired: Leaf;
const API_KEY = 'tmprl-api-key-that-must-never-be-logged-0123456789';

beforeAll(() => {
  pki = createPki();
  const authority = pki.createCa('test-ca');
  ca = authority;
  client = authority.issue('app-client');
  otherClient = pki.createCa('other-ca').issue('other-client');
  expired = authority.issue('expired-client', {
    notBefore: new Date('2020-01-01T00:00:00Z'),
    notAfter: new Date('2020-02-01T00:00:00Z'),
  });
});
afterAll(() => pki.remove());

/** A config with nothing from this machine: no HOME, so no ~/.config/temporalio/temporal.toml. */
function load(env: NodeJS.ProcessEnv) {
  return loadConfig({ NODE_ENV: 'test', ...env });
}

function problems(env: NodeJS.ProcessEnv): string {
  try {
    load(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error('loadConfig accepted the configuration');
}

function toml(name: string, text: string): string {
  const file = path.join(pki.dir, name);
  writeFileSync(file, text);
  return file;
}

describe('Temporal connection settings', () => {
  it('keeps the embedded dev server and plain text when nothing is set', () => {
    const config = load({});
    expect(config.TEMPORAL_ADDRESS).toBeUndefined();
    expect(config.TEMPORAL_NAMESPACE).toBe('default');
    expect(config.temporalConnection.tls).toBeUndefined();
    expect(clientConnectionOptions(config.temporalConnection, { address: 'x:1' })).toEqual({
      address: 'x:1',
    });
  });

  it('reads mTLS files from the TEMPORAL_TLS_* variables into the SDK options', () => {
    const config = load({
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca.certPath,
      TEMPORAL_TLS_CLIENT_CERT_PATH: client.certPath,
      TEMPORAL_TLS_CLIENT_KEY_PATH: client.keyPath,
      TEMPORAL_TLS_SERVER_NAME: 'frontend.temporal',
    });
    const options = nativeConnectionOptions(config.temporalConnection, {
      address: config.TEMPORAL_ADDRESS!,
    });
    const tls = options.tls as Exclude<typeof options.tls, boolean | null | undefined>;
    expect(Buffer.from(tls.serverRootCACertificate!).toString()).toBe(ca.certPem);
    expect(Buffer.from(tls.clientCertPair!.crt).toString()).toBe(client.certPem);
    expect(Buffer.from(tls.clientCertPair!.key).toString()).toBe(client.keyPem);
    expect(tls.serverNameOverride).toBe('frontend.temporal');
    expect(config.temporalConnection.summary).toContain('CN=app-client');
  });

  it('takes certificates as data too, and an API key alone turns TLS on (Temporal Cloud)', () => {
    const data = load({
      TEMPORAL_ADDRESS: 'h:7233',
      TEMPORAL_TLS_CLIENT_CERT_DATA: client.certPem,
      TEMPORAL_TLS_CLIENT_KEY_DATA: client.keyPem,
    });
    expect(data.temporalConnection.tls?.clientCert?.from).toBe('TEMPORAL_TLS_CLIENT_CERT_DATA');
    const cloud = load({
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'ns.acct',
      TEMPORAL_API_KEY: API_KEY,
    });
    const options = clientConnectionOptions(cloud.temporalConnection, { address: 'a:1' });
    expect(options.apiKey).toBe(API_KEY);
    // envconfig's `true`: TLS with the system's CAs.
    expect(options.tls).toBe(true);
    expect(
      load({ TEMPORAL_ADDRESS: 'h:1', TEMPORAL_API_KEY: API_KEY, TEMPORAL_TLS: 'false' })
        .temporalConnection.tls,
    ).toBeUndefined();
  });

  it('reads a temporal.toml profile chosen by TEMPORAL_PROFILE, the variables overriding it', () => {
    const file = toml(
      'profiles.toml',
      [
        '[profile.default]',
        'address = "localhost:7233"',
        '[profile.prod]',
        'address = "prod.example:7233"',
        'namespace = "payments-prod"',
        'api_key = "' + API_KEY + '"',
        '[profile.prod.tls]',
        `server_ca_cert_path = "${ca.certPath}"`,
        '',
      ].join('\n'),
    );
    const prod = load({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' });
    expect(prod.TEMPORAL_ADDRESS).toBe('prod.example:7233');
    expect(prod.TEMPORAL_NAMESPACE).toBe('payments-prod');
    expect(clientConnectionOptions(prod.temporalConnection, { address: 'a:1' }).apiKey).toBe(
      API_KEY,
    );
    expect(prod.temporalConnection.summary).toContain(`profile 'prod' of ${file}`);
    const overridden = load({
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_NAMESPACE: 'payments-staging',
    });
    expect(overridden.TEMPORAL_NAMESPACE).toBe('payments-staging');
    expect(load({ TEMPORAL_CONFIG_FILE: file }).TEMPORAL_ADDRESS).toBe('localhost:7233');
  });

  it.each([
    [{ TEMPORAL_TLS: 'maybe' }, /TEMPORAL_TLS: must be true or false/],
    [{ TEMPORAL_PROFILE: 'nope' }, /TEMPORAL_PROFILE: no profile 'nope'/],
    [
      { TEMPORAL_ADDRESS: 'h:1', TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/nonexistent/ca.pem' },
      /TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read the file: ENOENT \(\/nonexistent\/ca.pem\)/,
    ],
    [
      { TEMPORAL_ADDRESS: 'h:1', TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'not a certificate' },
      /TEMPORAL_TLS_SERVER_CA_CERT_DATA: no PEM certificate in it/,
    ],
    [
      {
        TEMPORAL_ADDRESS: 'h:1',
        TEMPORAL_TLS_SERVER_CA_CERT_DATA:
          '-----BEGIN CERTIFICATE-----\nbm90IGRlcg==\n-----END CERTIFICATE-----',
      },
      /TEMPORAL_TLS_SERVER_CA_CERT_DATA: a certificate in it is malformed/,
    ],
    [
      { TEMPORAL_TLS_CLIENT_CERT_PATH: 'CERT', TEMPORAL_TLS_CLIENT_KEY_DATA: 'garbage' },
      /TEMPORAL_TLS_CLIENT_KEY_DATA: not a PEM private key/,
    ],
    [
      { TEMPORAL_TLS_CLIENT_CERT_PATH: 'CERT', TEMPORAL_TLS_CLIENT_KEY_PATH: 'OTHER_KEY' },
      /TEMPORAL_TLS_CLIENT_KEY_PATH: this key does not belong to the client certificate/,
    ],
    [{ TEMPORAL_TLS_CLIENT_CERT_PATH: 'CERT' }, /a client certificate needs its key/],
    [
      { TEMPORAL_TLS_CLIENT_CERT_PATH: 'EXPIRED', TEMPORAL_TLS_CLIENT_KEY_PATH: 'EXPIRED_KEY' },
      /the client certificate expired on 2020-02-01/,
    ],
    [
      { TEMPORAL_TLS_CLIENT_CERT_PATH: 'CERT', TEMPORAL_TLS_CLIENT_CERT_DATA: 'x' },
      /TEMPORAL_TLS_CLIENT_CERT_PATH \/ TEMPORAL_TLS_CLIENT_CERT_DATA .*: give one, not both/,
    ],
    [{ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }, /TEMPORAL_TLS_DISABLE_HOST_VERIFICATION/],
    [
      { TEMPORAL_ADDRESS: '', TEMPORAL_API_KEY: API_KEY },
      /TEMPORAL_ADDRESS: TLS or an API key is configured but no address/,
    ],
  ])('stops start-up on %j, naming it', (env, message) => {
    const paths: Record<string, string> = {
      CERT: client.certPath,
      OTHER_KEY: otherClient.keyPath,
      EXPIRED: expired.certPath,
      EXPIRED_KEY: expired.keyPath,
    };
    const resolved = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, paths[v] ?? v]));
    expect(problems({ TEMPORAL_ADDRESS: 'h:7233', ...resolved })).toMatch(message);
  });

  it('names a malformed or misspelt temporal.toml without quoting it', () => {
    const broken = toml('broken.toml', `[profile.default]\napi_key = "${API_KEY}\n`);
    const message = problems({ TEMPORAL_CONFIG_FILE: broken });
    expect(message).toMatch(/TEMPORAL_CONFIG_FILE \(.*broken.toml\): not valid TOML at line \d+/);
    expect(message).not.toContain(API_KEY);
    const typo = toml('typo.toml', '[profile.default]\nadress = "h:1"\n');
    expect(problems({ TEMPORAL_CONFIG_FILE: typo })).toMatch(/unrecognized.*adress/);
    expect(problems({ TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml' })).toMatch(
      /TEMPORAL_CONFIG_FILE: \/nonexistent\/temporal.toml cannot be read/,
    );
  });

  it('never shows the API key or the private key: messages, JSON, inspect, summary', () => {
    const config = load({
      TEMPORAL_ADDRESS: 'h:7233',
      TEMPORAL_API_KEY: API_KEY,
      TEMPORAL_TLS_CLIENT_CERT_PATH: client.certPath,
      TEMPORAL_TLS_CLIENT_KEY_DATA: client.keyPem,
      TEMPORAL_GRPC_META_X_TENANT_TOKEN: 'header-secret-0123456789',
    });
    const keyBody = client.keyPem.split('\n')[1]!;
    for (const shown of [
      JSON.stringify(config),
      inspect(config, { depth: 10 }),
      config.temporalConnection.summary,
    ]) {
      expect(shown).not.toContain(API_KEY);
      expect(shown).not.toContain(keyBody);
      expect(shown).not.toContain('header-secret-0123456789');
    }
    // A key that belongs to another certificate: the message names the variable, not the key.
    const message = problems({
      TEMPORAL_TLS_CLIENT_CERT_PATH: client.certPath,
      TEMPORAL_TLS_CLIENT_KEY_DATA: otherClient.keyPem,
      TEMPORAL_API_KEY: API_KEY,
      TEMPORAL_TLS: 'sometimes',
    });
    expect(message).toContain('TEMPORAL_TLS_CLIENT_KEY_DATA');
    expect(message).not.toContain(otherClient.keyPem.split('\n')[1]!);
    expect(message).not.toContain(API_KEY);
  });
});
