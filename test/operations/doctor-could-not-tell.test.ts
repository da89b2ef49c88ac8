import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { temporal } from '@temporalio/proto';
import { main as ops } from '../../src/cli/ops';
import { doctorExitCode, EXIT_COULD_NOT_TELL } from '../../src/cli/doctor';
import { type CheckResult, formatReport } from '../../src/doctor';
import { checkDatabase } from '../../src/doctor/database';
import { checkPartners } from '../../src/doctor/partners';
import { checkTemporal, type TemporalCheckOptions } from '../../src/doctor/temporal';
import { result, timedOut } from '../../src/doctor/types';
import { DeadlineExceededError } from '../../src/monitoring/probes';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { readDoctorReport, untilAnswered, untilTheDoctorCanTell } from '../support/doctor';

// Issue 37: a doctor check whose call runs out of its deadline saw nothing, so it says "could not
// tell" (UNKNOWN, exit 4 when nothing failed), never OK and never a FAIL about what it did not
// see. Temporal here is a stand-in gRPC server that answers some calls and never answers others;
// the partners and PostgreSQL are sockets that accept and never answer. A refusal or an error the
// server sends is an answer, and stays a FAIL.

const { workflowservice, operatorservice, enums } = temporal.api;
const DEPLOYMENT = 'order-payments';
// The stand-ins answer in-process within milliseconds, even on a loaded machine; a call they never
// answer ends by this deadline. Shorter, and a loaded machine makes the answered calls UNKNOWN too.
const TIMEOUT_MS = 2_000;

type Reply = object | 'stall' | { grpcStatus: number; message: string };
type Handler = (request: { reportStats?: boolean | null }) => Reply;

const WORKFLOW_SERVICE = 'temporal.api.workflowservice.v1.WorkflowService';
const OPERATOR_SERVICE = 'temporal.api.operatorservice.v1.OperatorService';
const METHODS = {
  GetSystemInfo: [
    WORKFLOW_SERVICE,
    workflowservice.v1.GetSystemInfoRequest,
    workflowservice.v1.GetSystemInfoResponse,
  ],
  DescribeNamespace: [
    WORKFLOW_SERVICE,
    workflowservice.v1.DescribeNamespaceRequest,
    workflowservice.v1.DescribeNamespaceResponse,
  ],
  ListSearchAttributes: [
    OPERATOR_SERVICE,
    operatorservice.v1.ListSearchAttributesRequest,
    operatorservice.v1.ListSearchAttributesResponse,
  ],
  DescribeWorkerDeployment: [
    WORKFLOW_SERVICE,
    workflowservice.v1.DescribeWorkerDeploymentRequest,
    workflowservice.v1.DescribeWorkerDeploymentResponse,
  ],
  DescribeTaskQueue: [
    WORKFLOW_SERVICE,
    workflowservice.v1.DescribeTaskQueueRequest,
    workflowservice.v1.DescribeTaskQueueResponse,
  ],
} as const;
type Method = keyof typeof METHODS;
/** What protobufjs gives every message class; the union of five classes is not callable as one. */
interface Codec {
  fromObject(object: object): object;
  encode(message: object): { finish(): Uint8Array };
}

/** A healthy server: build-a current, one live poller of build-b on every queue, no backlog. */
function healthy(): Record<Method, Handler> {
  const seconds = Math.floor(Date.now() / 1000);
  return {
    GetSystemInfo: () => ({ serverVersion: '1.99.0-stand-in' }),
    DescribeNamespace: () => ({ config: { workflowExecutionRetentionTtl: { seconds: 86_400 } } }),
    ListSearchAttributes: () => ({
      customAttributes: Object.fromEntries(
        CUSTOM_SEARCH_ATTRIBUTES.map((k) => [
          k.name,
          enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${k.type}`],
        ]),
      ),
    }),
    DescribeWorkerDeployment: () => ({
      workerDeploymentInfo: {
        name: DEPLOYMENT,
        routingConfig: {
          currentDeploymentVersion: { deploymentName: DEPLOYMENT, buildId: 'build-a' },
        },
      },
    }),
    DescribeTaskQueue: (request: { reportStats?: boolean | null }) =>
      request.reportStats
        ? { stats: { approximateBacklogCount: 0 } }
        : {
            pollers: [
              {
                identity: '7@b-host',
                lastAccessTime: { seconds },
                deploymentOptions: {
                  deploymentName: DEPLOYMENT,
                  buildId: 'build-b',
                  workerVersioningMode:
                    enums.v1.WorkerVersioningMode.WORKER_VERSIONING_MODE_VERSIONED,
                },
              },
            ],
          },
  };
}

interface Closable {
  address: string;
  close(): Promise<void>;
}
const open: Closable[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/** Temporal's gRPC over plain HTTP/2: each call answered by its handler, or never ('stall'). */
async function standInTemporal(overrides: Partial<Record<Method, Handler>> = {}) {
  const handlers = { ...healthy(), ...overrides };
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    const [, service, name] = String(headers[':path']).split('/');
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const method = name as Method;
      if (!Object.hasOwn(METHODS, method) || METHODS[method][0] !== service) {
        return trailersOnly(stream, 12, 'unimplemented');
      }
      const [, requestType, responseType] = METHODS[method];
      const request = requestType.decode(Buffer.concat(chunks).subarray(5)) as {
        reportStats?: boolean;
      };
      const reply = handlers[method](request);
      if (reply === 'stall') return; // Never answered: the client's deadline ends the call.
      if ('grpcStatus' in reply) return trailersOnly(stream, reply.grpcStatus, reply.message);
      const codec = responseType as unknown as Codec;
      const body = Buffer.from(codec.encode(codec.fromObject(reply)).finish());
      const frame = Buffer.alloc(5 + body.length);
      frame.writeUInt32BE(body.length, 1);
      body.copy(frame, 5);
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc' },
        { waitForTrailers: true },
      );
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(frame);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const closable = {
    address,
    close: async () => {
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  open.push(closable);
  return closable;
}

function trailersOnly(stream: http2.ServerHttp2Stream, status: number, message: string) {
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(status),
      'grpc-message': encodeURIComponent(message),
    },
    { endStream: true },
  );
}

/** Accepts every connection and never says a word: a hung server. */
async function silentServer(): Promise<Closable> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const closable = {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  open.push(closable);
  return closable;
}

/** A port nothing listens on: connections are refused. */
async function refusedAddress(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `127.0.0.1:${port}`;
}

function options(address: string): TemporalCheckOptions {
  return {
    address,
    namespace: 'default',
    taskQueues: ['payments'],
    backlogWarnAt: 100,
    timeoutMs: TIMEOUT_MS,
    devDefault: false,
    deploymentName: DEPLOYMENT,
  };
}

const statuses = (results: CheckResult[]) =>
  Object.fromEntries(results.map((r) => [r.check, r.status]));
const row = (results: CheckResult[], check: string) => results.find((r) => r.check === check)!;

describe('a doctor check whose call gets no answer in time could not tell', () => {
  it('the workers and backlog of a queue whose DescribeTaskQueue never answers: UNKNOWN, not FAIL', async () => {
    const server = await standInTemporal({ DescribeTaskQueue: () => 'stall' });
    const results = await checkTemporal(options(server.address));
    expect(statuses(results)).toEqual({
      temporal: 'OK',
      namespace: 'OK',
      'search attributes': 'OK',
      deployment: 'OK',
      'workers: payments': 'UNKNOWN',
      'backlog: payments': 'UNKNOWN',
    });
    expect(row(results, 'workers: payments')).toMatchObject({
      detail: 'could not tell: Temporal did not answer within 2 s',
      hint: expect.stringMatching(/^run the doctor again; if Temporal keeps not answering/),
    });
    expect(doctorExitCode(results)).toBe(EXIT_COULD_NOT_TELL);
  });

  it('the workers of a deployment that does not answer: another build’s polls are not taken for the current one’s', async () => {
    const server = await standInTemporal({ DescribeWorkerDeployment: () => 'stall' });
    const results = await checkTemporal(options(server.address));
    // Read as unversioned, build-b's live poller would make this OK: a lie for a build-a rollback.
    expect(statuses(results)).toMatchObject({
      deployment: 'UNKNOWN',
      'workers: payments': 'UNKNOWN',
      'backlog: payments': 'OK',
    });
    expect(row(results, 'workers: payments').detail).toMatch(/^could not tell: the deployment/);
  });

  it('the same server, answering: build-b’s poller does not serve build-a (FAIL), the control of the two above', async () => {
    const server = await standInTemporal();
    const results = await checkTemporal(options(server.address));
    expect(statuses(results)).toMatchObject({ deployment: 'OK', 'workers: payments': 'FAIL' });
    expect(row(results, 'workers: payments').detail).toMatch(
      /^current build-a: no worker has polled it.*1 worker\(s\) of other builds poll it/,
    );
    expect(doctorExitCode(results)).toBe(1);
  });

  it('a namespace that does not answer: UNKNOWN (not "create it"), and the checks after it still run', async () => {
    const server = await standInTemporal({ DescribeNamespace: () => 'stall' });
    const results = await checkTemporal(options(server.address));
    expect(statuses(results)).toMatchObject({
      namespace: 'UNKNOWN',
      'search attributes': 'OK',
      deployment: 'OK',
    });
    expect(row(results, 'namespace').commands).toBeUndefined();
  });

  it('a Temporal that accepts connections and never answers: UNKNOWN, and what depends on it is skipped', async () => {
    const server = await standInTemporal({ GetSystemInfo: () => 'stall' });
    const results = await checkTemporal(options(server.address));
    expect(row(results, 'temporal')).toMatchObject({
      status: 'UNKNOWN',
      detail: 'could not tell: a connection opens, but Temporal did not answer within 2 s',
      hint: expect.stringMatching(/^run the doctor again; if it keeps not answering: /),
    });
    expect(statuses(results)).toMatchObject({ namespace: 'SKIP', 'workers: payments': 'SKIP' });
    expect(row(results, 'namespace').detail).toBe('Temporal did not answer in time');
  });

  it('answers stay answers: an error Temporal sends and a refused connection are FAILs', async () => {
    const server = await standInTemporal({
      DescribeTaskQueue: () => ({ grpcStatus: 7, message: 'not for you' }),
    });
    const denied = await checkTemporal(options(server.address));
    expect(row(denied, 'workers: payments')).toMatchObject({
      status: 'FAIL',
      detail: expect.stringMatching(/^could not check: .*not for you/),
    });
    const refused = await checkTemporal(options(await refusedAddress()));
    expect(row(refused, 'temporal')).toMatchObject({
      status: 'FAIL',
      detail: expect.stringMatching(/^unreachable: nothing listens on/),
    });
  });

  it('partners that accept connections and never answer: UNKNOWN; refused: FAIL', async () => {
    const [warehouse, smtp] = await Promise.all([silentServer(), silentServer()]);
    const target = (w: string, s: string) => ({
      warehouseUrl: `http://${w}`,
      smtpUrl: `smtp://${s}`,
      local: { warehouse: false, smtp: false },
    });
    const silent = await checkPartners(target(warehouse.address, smtp.address), {
      timeoutMs: TIMEOUT_MS,
    });
    expect(statuses(silent)).toEqual({ warehouse: 'UNKNOWN', smtp: 'UNKNOWN' });
    expect(row(silent, 'warehouse').detail).toBe(
      `could not tell: http://${warehouse.address}/v1/health did not answer within 2 s`,
    );
    const closed = await refusedAddress();
    const refused = await checkPartners(target(closed, closed), { timeoutMs: TIMEOUT_MS });
    expect(statuses(refused)).toEqual({ warehouse: 'FAIL', smtp: 'FAIL' });
  });

  it('a PostgreSQL that accepts connections and never answers: UNKNOWN, the password not shown', async () => {
    const postgres = await silentServer();
    const results = await checkDatabase(`postgres://app:s3cret@${postgres.address}/orders`, {
      timeoutMs: TIMEOUT_MS,
    });
    expect(statuses(results)).toEqual({ database: 'UNKNOWN', migrations: 'SKIP' });
    expect(row(results, 'database').detail).toBe(
      `could not tell: postgres://app:***@${postgres.address}/orders did not answer within 2 s`,
    );
  }, 20_000);
});

describe('npm run ops -- doctor when a check could not tell', () => {
  let database: TestDatabaseHandle;
  beforeAll(async () => {
    database = await testDatabases.find((d) => d.name === 'sqlite')!.create();
  });
  afterAll(() => database?.close());

  /** An answering warehouse (its status given) and SMTP server. */
  async function partners(warehouseStatus: number) {
    const warehouse = http.createServer((_req, res) => res.writeHead(warehouseStatus).end());
    // Reads what it is sent (QUIT), or the socket never sees the client's end and never closes.
    const smtp = net.createServer((socket) => socket.resume().end('220 stand-in ESMTP\r\n'));
    await Promise.all(
      [warehouse, smtp].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))),
    );
    const port = (s: net.Server) => (s.address() as net.AddressInfo).port;
    open.push({
      address: '',
      close: async () => {
        warehouse.closeAllConnections();
        await Promise.all([warehouse, smtp].map((s) => new Promise((r) => s.close(r))));
      },
    });
    return {
      WAREHOUSE_API_URL: `http://127.0.0.1:${port(warehouse)}`,
      SMTP_URL: `smtp://127.0.0.1:${port(smtp)}`,
    };
  }

  async function doctor(env: NodeJS.ProcessEnv) {
    const out: string[] = [];
    const code = await ops(['doctor'], { out: (t) => out.push(t), err: (t) => out.push(t), env });
    return readDoctorReport(code, out.join('\n'));
  }

  it('exits 4 when nothing failed and Temporal did not answer within 5 s; 1 when something also failed', async () => {
    const server = await standInTemporal({ GetSystemInfo: () => 'stall' });
    const env = (more: NodeJS.ProcessEnv) => ({
      NODE_ENV: 'development',
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: server.address,
      ...more,
    });
    const started = Date.now();
    const [unknown, failed] = await Promise.all([
      doctor(env(await partners(200))),
      doctor(env(await partners(503))),
    ]);
    expect(Date.now() - started).toBeLessThan(15_000);

    expect(unknown.status('temporal')).toBe('UNKNOWN');
    expect(unknown.line('temporal')).toContain('could not tell: a connection opens');
    expect(unknown.text).toContain('did not answer within 5 s');
    expect(unknown.couldNotTell).toEqual(['temporal']);
    expect(unknown.status('warehouse')).toBe('OK');
    expect(unknown.text).toMatch(
      /^No FAIL, \d+ WARN, 1 UNKNOWN: could not tell.*run the doctor again\.$/m,
    );
    expect(unknown.code).toBe(4);

    expect(failed.status('warehouse')).toBe('FAIL');
    expect(failed.text).toMatch(/^1 FAIL, \d+ WARN, 1 UNKNOWN: not ready to take payments\.$/m);
    expect(failed.code).toBe(1);
  }, 30_000);
});

describe('the exit code, the verdict, and what counts as no answer in time', () => {
  it.each([
    [['OK', 'WARN', 'SKIP'], 0],
    [['OK', 'UNKNOWN', 'WARN'], 4],
    [['UNKNOWN', 'FAIL'], 1],
    [['FAIL'], 1],
  ] as const)('%j exits %i', (list, code) => {
    expect(doctorExitCode(list.map((s, i) => result(`check ${i}`, s, 'x')))).toBe(code);
  });

  it('says "could not tell" in the verdict, never "All checks OK"', () => {
    const report = formatReport([
      result('a', 'OK', 'x'),
      result('b', 'UNKNOWN', 'could not tell: y'),
    ]);
    expect(report).toMatch(/No FAIL, 0 WARN, 1 UNKNOWN: could not tell/);
    expect(report).not.toContain('All checks OK');
  });

  it.each([
    { name: 'our own deadline', error: new DeadlineExceededError('the database', 5000), is: true },
    {
      name: 'gRPC DEADLINE_EXCEEDED, wrapped',
      error: new Error('Failed', { cause: { code: 4, details: 'Deadline exceeded' } }),
      is: true,
    },
    {
      name: 'grpc-js waitForReady',
      error: new Error('Failed to connect before the deadline'),
      is: true,
    },
    {
      name: 'fetch’s timeout signal',
      error: Object.assign(new Error('aborted'), { name: 'TimeoutError' }),
      is: true,
    },
    {
      name: 'a refused connection',
      error: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      is: false,
    },
    {
      name: 'PERMISSION_DENIED',
      error: Object.assign(new Error('7 PERMISSION_DENIED: no'), { code: 7 }),
      is: false,
    },
    {
      name: 'NOT_FOUND',
      error: Object.assign(new Error('5 NOT_FOUND: namespace'), { code: 5 }),
      is: false,
    },
  ])('$name: timed out = $is', ({ error, is }) => {
    expect(timedOut(error)).toBe(is);
  });
});

describe('the tests’ doctor: asked again only while it could not tell', () => {
  afterEach(() => jest.restoreAllMocks());
  const report = (...rows: string[]) =>
    readDoctorReport(rows.some((r) => r.includes('UNKNOWN')) ? 4 : 0, rows.join('\n'));
  const told = report('workers: payments  OK       1 polling');
  const unknown = report('workers: payments  UNKNOWN  could not tell: Temporal did not answer');

  it('runs it again while a row is UNKNOWN, and returns the first report that tells', async () => {
    const answers = [unknown, unknown, told];
    const run = jest.fn(() => Promise.resolve(answers.shift()!));
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    await expect(untilTheDoctorCanTell(run, { intervalMs: 1 })).resolves.toBe(told);
    expect(run).toHaveBeenCalledTimes(3);
    expect(warn).toHaveBeenCalledTimes(2);
    expect(warn.mock.calls[0]![0]).toContain('workers: payments stayed UNKNOWN');
  });

  it('returns any other answer at once, for the assertions to judge', async () => {
    const wrong = report('workers: payments  FAIL     no worker polls');
    const run = jest.fn(() => Promise.resolve(wrong));
    await expect(untilTheDoctorCanTell(run)).resolves.toBe(wrong);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('fails saying so when it never tells', async () => {
    jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    await expect(
      untilTheDoctorCanTell(() => Promise.resolve(unknown), { timeoutMs: 20, intervalMs: 5 }),
    ).rejects.toThrow(
      /the doctor could not tell in \d+ run\(s\): workers: payments stayed UNKNOWN/,
    );
  });

  it('untilAnswered: calls again only on a deadline, and throws any other error at once', async () => {
    const deadline = Object.assign(new Error('4 DEADLINE_EXCEEDED'), { code: 4 });
    const outcomes = [deadline, new Error('no live worker of build a polls payments')];
    const call = jest.fn(() => Promise.reject(outcomes.shift()!));
    jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    await expect(untilAnswered(call, { intervalMs: 1 })).rejects.toThrow('no live worker');
    expect(call).toHaveBeenCalledTimes(2);
  });
});
