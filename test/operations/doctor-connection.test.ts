import net from 'node:net';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { main as ops } from '../../src/cli/ops';
import { main as setup } from '../../src/cli/temporal-setup';
import { loadConfig } from '../../src/config';
import { paymentWorkflowId } from '../../src/shared/constants';
import { createLazyClient } from '../../src/temporal/connection';
import { createPaymentStarter, TemporalUnavailableError } from '../../src/temporal/payment-starter';
import { temporalSetupReadiness } from '../../src/temporal/setup';
import { connectWhenReachable } from '../../src/temporal/connection';
import { createPki, type Leaf, type Pki } from '../../harness/certificates';
import { type FrontDoor, startFrontDoor } from '../support/grpc-front-door';
import { createDevServerEnv } from '../../harness/temporal/test-env';

// `npm run ops -- doctor` on a secured Temporal: a real dev server behind a TLS front door (mTLS and an
// API key checked as Temporal Cloud's front end does), with certificates made here by openssl.
// Each broken setting gives its own diagnosis within seconds; no secret reaches the output.
const API_KEY = 'tmprl-doctor-test-api-key-0123456789abcdef';
let server: TestWorkflowEnvironment;
let bare: TestWorkflowEnvironment;
let pki: Pki;
let caPath: string;
let otherCaPath: string;
let client: Leaf;
let stranger: Leaf;
let secured: FrontDoor;
let securedBare: FrontDoor;
let expiredServer: FrontDoor;
let blackHole: net.Server;
// The connections it accepted and never answers: closing the server leaves them open (and jest
// running after the last test) until they are destroyed.
const swallowed = new Set<net.Socket>();

beforeAll(async () => {
  [server, bare] = await Promise.all([
    createDevServerEnv(),
    // A fresh cluster as a new user meets it: no custom search attributes.
    createDevServerEnv({ searchAttributes: [] }),
  ]);
  pki = createPki();
  const ca = pki.createCa('cluster-ca');
  const other = pki.createCa('other-ca');
  caPath = ca.certPath;
  otherCaPath = other.certPath;
  const frontend = ca.issue('frontend');
  client = ca.issue('app');
  stranger = other.issue('stranger');
  const expired = ca.issue('expired-frontend', {
    notBefore: new Date('2020-01-01T00:00:00Z'),
    notAfter: new Date('2020-02-01T00:00:00Z'),
  });
  const door = { certPem: frontend.certPem, keyPem: frontend.keyPem, clientCaPem: ca.certPem };
  [secured, securedBare, expiredServer] = await Promise.all([
    startFrontDoor({ ...door, target: server.address, apiKey: API_KEY }),
    startFrontDoor({ ...door, target: bare.address }),
    startFrontDoor({ certPem: expired.certPem, keyPem: expired.keyPem, target: server.address }),
  ]);
  blackHole = net.createServer((socket) => swallowed.add(socket));
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  blackHole?.close();
  for (const socket of swallowed) socket.destroy();
  await Promise.all([secured?.close(), securedBare?.close(), expiredServer?.close()]);
  await Promise.all([server?.teardown(), bare?.teardown()]);
  pki?.remove();
});

function mtls(door: FrontDoor, overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    NODE_ENV: 'development',
    DATABASE_URL: 'sqlite::memory:',
    TEMPORAL_ADDRESS: door.address,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: caPath,
    TEMPORAL_TLS_CLIENT_CERT_PATH: client.certPath,
    TEMPORAL_TLS_CLIENT_KEY_PATH: client.keyPath,
    TEMPORAL_API_KEY: API_KEY,
    ...overrides,
  };
}

async function doctor(env: NodeJS.ProcessEnv) {
  const out: string[] = [];
  const started = Date.now();
  const code = await ops(['doctor'], { out: (t) => out.push(t), err: (t) => out.push(t), env });
  const text = out.join('\n');
  const line = (check: string) => text.split('\n').find((l) => l.startsWith(`${check} `)) ?? '';
  return { code, text, line, ms: Date.now() - started };
}

describe('npm run ops -- doctor on a secured connection', () => {
  it('connects with mTLS and an API key, and says how, without showing a secret', async () => {
    const report = await doctor(mtls(secured));
    expect(report.line('temporal')).toMatch(/^temporal\s+OK\s+server 1\.\S+ at /);
    expect(report.line('connection')).toMatch(/OK\s+API key; mTLS \(client certificate CN=app/);

    expect(report.line('namespace')).toMatch(/\sOK\s/);
    expect(report.line('client certificate')).toMatch(/WARN\s+CN=app, expires \S+ \(in \d d\)/);
    expect(report.text).not.toContain(API_KEY);
    expect(report.text).not.toContain(client.keyPem.split('\n')[1]!);
  });

  it.each([
    [
      'wrong CA',
      { TEMPORAL_TLS_SERVER_CA_CERT_PATH: 'OTHER_CA' },
      /TLS refused: server certificate not signed by the CA in TEMPORAL_TLS_SERVER_CA_CERT_PATH/,
    ],
    [
      'a client certificate the server does not trust',
      { TEMPORAL_TLS_CLIENT_CERT_PATH: 'STRANGER', TEMPORAL_TLS_CLIENT_KEY_PATH: 'STRANGER_KEY' },
      /TLS refused: the server rejected the client certificate CN=stranger/,
    ],
    [
      'no client certificate',
      { TEMPORAL_TLS_CLIENT_CERT_PATH: '', TEMPORAL_TLS_CLIENT_KEY_PATH: '' },
      /TLS refused: the server requires a client certificate \(mTLS\); none was sent/,
    ],
    [
      'a server name the certificate does not hold',
      { TEMPORAL_TLS_SERVER_NAME: 'frontend.example' },
      /TLS refused: the server certificate is not for frontend\.example/,
    ],
    [
      'a bad API key',
      { TEMPORAL_API_KEY: 'tmprl-wrong-key' },
      /unauthenticated: the server refused the API key/,
    ],
    [
      'plain text to a TLS server',
      { TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: '' },
      /the server speaks TLS, and TLS is not configured here/,
    ],
  ])('names the problem within seconds: %s', async (_case, overrides, problem) => {
    const files: Record<string, string> = {
      OTHER_CA: otherCaPath,
      STRANGER: stranger.certPath,
      STRANGER_KEY: stranger.keyPath,
    };
    const env = Object.fromEntries(Object.entries(overrides).map(([k, v]) => [k, files[v] ?? v]));
    const report = await doctor(mtls(secured, env));
    expect(report.line('temporal')).toMatch(/^temporal\s+FAIL\s/);
    expect(report.line('temporal')).toMatch(problem);
    expect(report.line('namespace')).toMatch(/\sSKIP\s/);
    expect(report.code).toBe(1);
    expect(report.ms).toBeLessThan(8_000);
    expect(report.text).not.toContain(API_KEY);
  });

  it('names a server certificate that has expired', async () => {
    const report = await doctor({
      NODE_ENV: 'development',
      DATABASE_URL: 'sqlite::memory:',
      TEMPORAL_ADDRESS: expiredServer.address,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: caPath,
    });
    expect(report.line('temporal')).toMatch(
      /FAIL\s+TLS refused: the server certificate has expired/,
    );
  });

  it('names an expired client certificate before connecting', async () => {
    const old = pki.createCa('old-ca').issue('old-app', {
      notBefore: new Date('2020-01-01T00:00:00Z'),
      notAfter: new Date('2020-02-01T00:00:00Z'),
    });
    const report = await doctor(
      mtls(secured, {
        TEMPORAL_TLS_CLIENT_CERT_PATH: old.certPath,
        TEMPORAL_TLS_CLIENT_KEY_PATH: old.keyPath,
      }),
    );
    expect(report.line('configuration')).toMatch(
      /FAIL\s+TEMPORAL_TLS_CLIENT_CERT_PATH: the client certificate expired on 2020-02-01/,
    );
    expect(report.code).toBe(1);
  });

  it('names an unreachable address and a server that never answers, without hanging', async () => {
    const refused = await doctor(mtls(secured, { TEMPORAL_ADDRESS: '127.0.0.1:1' }));
    expect(refused.line('temporal')).toMatch(
      /FAIL.*unreachable: nothing listens on 127\.0\.0\.1:1/,
    );
    expect(refused.ms).toBeLessThan(3_000);
    const port = (blackHole.address() as net.AddressInfo).port;
    const silent = await doctor({
      NODE_ENV: 'development',
      DATABASE_URL: 'sqlite::memory:',
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
    });
    // No answer in time is no evidence either way (issue 37): could not tell.
    expect(silent.line('temporal')).toMatch(
      /UNKNOWN\s+could not tell: a connection opens, but Temporal did not answer within 5 s/,
    );
    expect(silent.ms).toBeLessThan(12_000);
  }, 20_000);

  it('names an unknown namespace', async () => {
    const report = await doctor(mtls(secured, { TEMPORAL_NAMESPACE: 'no-such-namespace' }));
    expect(report.line('temporal')).toMatch(/\sOK\s/);
    expect(report.line('namespace')).toMatch(/FAIL\s+no-such-namespace: .*not found/i);
  });
});

describe('a half-set-up cluster', () => {
  it('is reported: the start is a configuration error, readiness fails with the reason, npm run temporal:setup fixes both', async () => {
    const config = loadConfig(mtls(securedBare, { TEMPORAL_API_KEY: '' }));
    const lazy = createLazyClient({
      address: config.TEMPORAL_ADDRESS!,
      namespace: config.TEMPORAL_NAMESPACE,
      settings: config.temporalConnection,
    });
    try {
      const starter = createPaymentStarter(lazy, { startTimeoutMs: 5_000 });
      const refused = await starter.start({ eventId: 'evt-setup-1', orderId: 7, amount: 100 }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(TemporalUnavailableError);
      expect((refused as TemporalUnavailableError).configurationProblem).toMatch(
        /lacks a search attribute .*: run npm run temporal:setup/,
      );

      const readiness = temporalSetupReadiness(lazy.connection, config.TEMPORAL_NAMESPACE);
      await expect(readiness.check(Date.now() + 5_000)).rejects.toThrow(
        /search attributes not registered in default: OrderId, PaymentEventId, PartnerPaused .*npm run temporal:setup/,
      );
      const before = await doctor(mtls(securedBare, { TEMPORAL_API_KEY: '' }));
      expect(before.line('search attributes')).toMatch(
        /FAIL\s+not registered: OrderId, PaymentEventId, PartnerPaused/,
      );

      const out: string[] = [];
      const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t) };
      const env = mtls(securedBare, { TEMPORAL_API_KEY: '' });
      expect(await setup([], { ...io, env })).toBe(0);
      expect(out.join('\n')).toMatch(
        /search attributes\s+created\s+registered OrderId, PaymentEventId, PartnerPaused/,
      );
      expect(out.join('\n')).toMatch(/schedule\s+created\s+aggregate-stock/);
      // Idempotent: a second run finds everything in place.
      out.length = 0;
      expect(await setup([], { ...io, env })).toBe(0);
      expect(out.join('\n')).toMatch(/namespace\s+present/);
      expect(out.join('\n')).toMatch(/search attributes\s+present/);
      expect(out.join('\n')).toMatch(/schedule\s+present/);

      await expect(readiness.check(Date.now() + 5_000)).resolves.toBeUndefined();
      const after = await doctor(env);
      expect(after.line('search attributes')).toMatch(/\sOK\s/);
      await expect(
        starter.start({ eventId: 'evt-setup-2', orderId: 7, amount: 100 }),
      ).resolves.toEqual({ workflowId: paymentWorkflowId('evt-setup-2'), duplicate: false });
    } finally {
      await lazy.connection.close();
    }
  }, 60_000);

  it('creates a missing namespace where the cluster allows it', async () => {
    const out: string[] = [];
    const env = mtls(securedBare, { TEMPORAL_API_KEY: '', TEMPORAL_NAMESPACE: 'payments-new' });
    const code = await setup(['--retention-days', '3'], {
      out: (t) => out.push(t),
      err: (t) => out.push(t),
      env,
    });
    expect(out.join('\n')).toMatch(/namespace\s+created\s+payments-new \(retention 3 d\)/);
    expect(code).toBe(0);
    expect((await doctor(env)).line('namespace')).toMatch(/OK\s+payments-new \(retention 3 d\)/);
  }, 60_000);
});

describe('a worker on a secured connection', () => {
  it('connects with the client certificate and API key from the configuration', async () => {
    const config = loadConfig(mtls(secured));
    const connection = await connectWhenReachable({
      address: config.TEMPORAL_ADDRESS!,
      settings: config.temporalConnection,
    });
    try {
      const info = await connection!.workflowService.getSystemInfo({});
      expect(info.serverVersion).toMatch(/^1\./);
    } finally {
      await connection?.close();
    }
  });
});
