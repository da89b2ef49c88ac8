import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createChaosPostgres } from '../../harness/postgres/cluster';
import { ProcessRegistry, SupervisedProcess } from '../../harness/process/supervisor';
import {
  killGroupsListedIn,
  quietCommand,
  startOrphanWatchdog,
} from '../../harness/process/watchdog';
import { ensureClusterCerts, FRONTEND_SERVER_NAME, type ClusterCerts } from './certs';
import { SERVICES, writeClusterConfig, type ClusterPorts, type ServiceName } from './config';
import {
  applySchemas,
  clusterMetadataWritten,
  registerNamespace,
  registerSearchAttributes,
  waitUntil,
  withConnection,
} from './bootstrap';
import { provisionClusterBinaries, type ServerBinaries } from './provision-server';

/**
 * A multi-service Temporal server on this machine: PostgreSQL (Debian's, a cluster of its own)
 * for persistence and visibility, schemas applied by temporal-sql-tool, and the frontend,
 * history, matching and worker services as four processes, each in a process group of its own
 * so that one can be SIGKILLed and started again (the fault tests do). Everything it starts,
 * stop() stops; a watchdog does it if this process dies first.
 */

export interface ClusterOptions {
  /** Holds pg/, certs/, config/ and logs/; kept between runs when the caller wants. */
  root: string;
  ports: ClusterPorts;
  namespace?: string;
  /** mTLS between the services as well as on the frontend (default true). */
  internodeTls?: boolean;
  /** Server log level (default warn: the services are chatty at info). */
  logLevel?: string;
  log?: (line: string) => void;
  binaries?: ServerBinaries;
  /** Aborts a start-up under way (Ctrl-C): what was started is stopped, and the start rejects. */
  signal?: AbortSignal;
}

export interface TemporalCluster {
  /** The frontend, where clients connect (mTLS). */
  readonly address: string;
  readonly namespace: string;
  readonly certs: ClusterCerts;
  /** Superuser URL of the cluster's PostgreSQL server, where an app database can live too. */
  readonly postgresUrl: string;
  readonly logDir: string;
  /** The standard Temporal CLI/SDK variables that point a client at this cluster. */
  clientEnv(): Record<string, string>;
  /** An SDK connection with the app's client certificate. Close it. */
  connect(): Promise<Connection>;
  /** Sends `signal` to one service (its whole process group) and waits until it has exited. */
  kill(service: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a service that was killed and waits until it serves again; returns how long it took. */
  restart(service: ServiceName): Promise<number>;
  pid(service: ServiceName): number | undefined;
  /** Exits of a service that nobody asked for (a crash). */
  unexpectedExits(): Array<{ service: ServiceName; code: number | null; signal: string | null }>;
  stop(): Promise<void>;
}

const DEFAULT_NAMESPACE = 'default';
const STOP_GRACE_MS = 10_000;
// primitives.PerNSWorkerTaskQueue in the server: the system workers of every namespace.
const SYSTEM_WORKER_TASK_QUEUE = 'temporal-sys-per-ns-tq';

export async function startCluster(options: ClusterOptions): Promise<TemporalCluster> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[cluster] ${line}\n`));
  const namespace = options.namespace ?? DEFAULT_NAMESPACE;
  const root = path.resolve(options.root);
  const dirs = {
    pg: path.join(root, 'pg'),
    certs: path.join(root, 'certs'),
    config: path.join(root, 'config'),
    logs: path.join(root, 'logs'),
  };
  await fs.mkdir(dirs.logs, { recursive: true });
  const binaries = options.binaries ?? (await provisionClusterBinaries({ log }));
  const certs = await ensureClusterCerts(dirs.certs);
  await writeClusterConfig({
    configDir: dirs.config,
    ports: options.ports,
    certs,
    internodeTls: options.internodeTls ?? true,
    logLevel: options.logLevel ?? 'warn',
  });

  const registry = new ProcessRegistry(path.join(root, 'pgids'));
  const postgres = createChaosPostgres(dirs.pg, options.ports.postgres);
  // Acts only if this process dies without stop() (kill -9, a closed terminal).
  const watchdog = startOrphanWatchdog([
    killGroupsListedIn(path.join(root, 'pgids')),
    quietCommand(postgres.stopImmediateCommand),
  ]);
  const services = new Map<ServiceName, SupervisedProcess>();
  const address = `127.0.0.1:${options.ports.services.frontend.grpc}`;
  const tls = async () => ({
    serverNameOverride: FRONTEND_SERVER_NAME,
    serverRootCACertificate: await fs.readFile(certs.ca),
    clientCertPair: {
      crt: await fs.readFile(certs.client.cert),
      key: await fs.readFile(certs.client.key),
    },
  });
  const connect = async () =>
    Connection.connect({ address, tls: await tls(), connectTimeout: 5_000 });

  const ready = (what: string, attempt: () => Promise<unknown>) =>
    waitUntil(what, attempt, services, options.signal);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // The frontend first, so no client request lands on a half-stopped cluster; history
      // last, as upstream's Helm chart drains it.
      for (const name of ['frontend', 'worker', 'matching', 'history'] as const) {
        await services.get(name)?.stop('SIGTERM', STOP_GRACE_MS);
      }
      await postgres
        .stopImmediately()
        .catch((error: unknown) => log(`PostgreSQL stop: ${String(error)}`));
      watchdog.stop();
    })());

  try {
    log(`PostgreSQL on 127.0.0.1:${postgres.port} (data in ${dirs.pg})`);
    await postgres.start();
    await applySchemas(binaries.sqlTool, postgres, log);

    // Every service writes the cluster's metadata record at start if it is missing, and on a
    // fresh database the losers of that race exit. History goes first; the others follow once
    // the record exists.
    for (const name of ['history', 'frontend', 'matching', 'worker'] as const) {
      if (name !== 'history') {
        await ready('the cluster metadata is written', () => clusterMetadataWritten(postgres.url));
      }
      const process_ = new SupervisedProcess(
        {
          name,
          command: binaries.server,
          args: [
            '--root',
            root,
            '--config',
            'config',
            '--env',
            name,
            '--allow-no-auth',
            'start',
            '--service',
            name,
          ],
          env: { ...process.env },
          cwd: root,
          logFile: path.join(dirs.logs, `${name}.log`),
          restart: false,
          restartDelayMs: 0,
        },
        registry,
      );
      services.set(name, process_);
      process_.start();
      log(
        `${name} started (pid ${process_.pid}, gRPC 127.0.0.1:${options.ports.services[name].grpc})`,
      );
    }

    await ready('the frontend answers', () =>
      withConnection(connect, (c) => c.workflowService.getSystemInfo({})),
    );
    await withConnection(connect, (c) => registerNamespace(c, namespace, log));
    await withConnection(connect, (c) => registerSearchAttributes(c, namespace, log));
    for (const name of SERVICES) await waitForService(name);
  } catch (error) {
    await stop();
    throw error;
  }

  async function waitForService(name: ServiceName): Promise<void> {
    const probe = SERVICE_PROBES[name];
    await ready(`${name} serves`, () => withConnection(connect, (c) => probe(c, namespace)));
  }

  return {
    address,
    namespace,
    certs,
    postgresUrl: postgres.url,
    logDir: dirs.logs,
    clientEnv: () => ({
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      TEMPORAL_TLS: 'true',
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.client.cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.client.key,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
      TEMPORAL_TLS_SERVER_NAME: FRONTEND_SERVER_NAME,
    }),
    connect,
    async kill(service, signal = 'SIGKILL') {
      const process_ = services.get(service)!;
      const exited = process_.exited();
      process_.kill(signal);
      await exited;
    },
    async restart(service) {
      const started = Date.now();
      services.get(service)!.start();
      await waitForService(service);
      return Date.now() - started;
    },
    pid: (service) => services.get(service)?.pid,
    unexpectedExits: () =>
      [...services.entries()].flatMap(([service, p]) =>
        p.unexpectedExits.map((e) => ({ service, code: e.code, signal: e.signal })),
      ),
    stop,
  };
}

/**
 * What proves a service serves, asked through the frontend: history owns the shard of a
 * workflow ID (a lookup of an unknown one answers NotFound from history), matching owns a task
 * queue partition, and the worker service (which serves no gRPC of its own) polls its
 * per-namespace task queue through the frontend, with its mTLS client certificate.
 */
const SERVICE_PROBES: Record<ServiceName, (c: Connection, namespace: string) => Promise<unknown>> =
  {
    frontend: (c) => c.workflowService.getSystemInfo({}),
    history: async (c, namespace) => {
      // Several IDs, so that every shard of the 4 (and whichever host owns it) is asked.
      for (let i = 0; i < 16; i++) {
        await expectNotFound(
          c.workflowService.describeWorkflowExecution({
            namespace,
            execution: { workflowId: `readiness-probe-${randomUUID()}` },
          }),
        );
      }
    },
    matching: (c, namespace) =>
      c.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: `readiness-probe-${randomUUID()}` },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      }),
    worker: async (c, namespace) => {
      const { pollers } = await c.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: SYSTEM_WORKER_TASK_QUEUE },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      if (!pollers?.length) throw new Error('the worker service does not poll yet');
    },
  };

async function expectNotFound(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (error) {
    // gRPC NOT_FOUND (5): history looked and found nothing, which is the answer we want.
    if ((error as { code?: number }).code === 5) return;
    throw error;
  }
}
