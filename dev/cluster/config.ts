import fs from 'node:fs/promises';
import path from 'node:path';
import { freePorts } from '../../harness/ports';
import { FRONTEND_SERVER_NAME, INTERNODE_SERVER_NAME, type ClusterCerts } from './certs';

/**
 * The server configuration of the cluster, one file per service. It starts from the module's
 * own `config/development-postgres12.yaml` (PostgreSQL 12+ persistence and visibility, 4 history
 * shards) and `config/dynamicconfig/development-sql.yaml`, and changes what a multi-process,
 * mTLS install needs. The files are written as JSON, which every YAML parser reads as YAML.
 */

export const SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type ServiceName = (typeof SERVICES)[number];

export interface ServicePorts {
  grpc: number;
  membership: number;
  /** Prometheus metrics of this process. */
  metrics: number;
}

export interface ClusterPorts {
  services: Record<ServiceName, ServicePorts>;
  /** The frontend's HTTP API (same TLS as its gRPC port). */
  frontendHttp: number;
  postgres: number;
}

/**
 * Fixed ports for `npm run cluster`: upstream's numbering shifted by 10000 (frontend 17233,
 * history 17234, matching 17235, worker 17239, membership 169xx), so the cluster runs beside
 * `npm start`'s dev server on 7233.
 */
export function fixedPorts(): ClusterPorts {
  const offsets: Record<ServiceName, number> = { frontend: 0, history: 1, matching: 2, worker: 6 };
  const services = Object.fromEntries(
    SERVICES.map((name) => [
      name,
      {
        grpc: 17233 + offsets[name],
        membership: 16933 + offsets[name],
        metrics: 18000 + offsets[name],
      },
    ]),
  ) as Record<ServiceName, ServicePorts>;
  return { services, frontendHttp: 17243, postgres: 15432 };
}

/** Free ports, for a cluster beside other servers (tests). */
export async function freeClusterPorts(): Promise<ClusterPorts> {
  const ports = await freePorts(SERVICES.length * 3 + 2);
  const next = () => ports.shift()!;
  const services = Object.fromEntries(
    SERVICES.map((name) => [name, { grpc: next(), membership: next(), metrics: next() }]),
  ) as Record<ServiceName, ServicePorts>;
  return { services, frontendHttp: next(), postgres: next() };
}

export const NUM_HISTORY_SHARDS = 4;

export interface ConfigInput {
  configDir: string;
  ports: ClusterPorts;
  certs: ClusterCerts;
  /** TLS between the services too (default), or plain text inside the cluster. */
  internodeTls: boolean;
  logLevel: string;
}

/** Writes `<service>.yaml` for each service and `dynamic.yaml`; returns nothing else. */
export async function writeClusterConfig(input: ConfigInput): Promise<void> {
  await fs.mkdir(input.configDir, { recursive: true });
  const dynamicFile = path.join(input.configDir, 'dynamic.yaml');
  await fs.writeFile(dynamicFile, `${JSON.stringify(dynamicConfig(input), null, 2)}\n`);
  for (const service of SERVICES) {
    const config = staticConfig(input, service, dynamicFile);
    await fs.writeFile(
      path.join(input.configDir, `${service}.yaml`),
      `${JSON.stringify(config, null, 2)}\n`,
    );
  }
}

function staticConfig(input: ConfigInput, service: ServiceName, dynamicFile: string): object {
  const { ports } = input;
  const sqlStore = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `127.0.0.1:${ports.postgres}`,
      connectProtocol: 'tcp',
      // The throwaway cluster trusts local connections; a managed PostgreSQL would take a
      // password from a secret here (and `tls` for the connection).
      user: 'postgres',
      password: 'postgres',
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const frontendAddress = `127.0.0.1:${ports.services.frontend.grpc}`;
  return {
    log: { stdout: true, level: input.logLevel },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      // Fixed for the life of the cluster (a shard count cannot be changed later); 4 is the
      // smallest that exercises shard ownership moving between history hosts. Production:
      // 512 or more, sized for the peak load the cluster will ever carry.
      numHistoryShards: NUM_HISTORY_SHARDS,
      datastores: {
        // Upstream's 20 connections per store and process, minus what four processes on one
        // small PostgreSQL do not need.
        'postgres-default': sqlStore('temporal', 20),
        'postgres-visibility': sqlStore('temporal_visibility', 10),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      // Each process has its own metrics port, as each pod of a Helm install does.
      metrics: {
        prometheus: {
          framework: 'tally',
          timerType: 'histogram',
          listenAddress: `127.0.0.1:${ports.services[service].metrics}`,
        },
      },
      tls: tlsConfig(input),
    },
    services: Object.fromEntries(
      SERVICES.map((name) => [
        name,
        {
          rpc: {
            grpcPort: ports.services[name].grpc,
            membershipPort: ports.services[name].membership,
            bindOnLocalHost: true,
            ...(name === 'frontend' ? { httpPort: ports.frontendHttp } : {}),
          },
        },
      ]),
    ),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: frontendAddress,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    // No archival: it needs a blob store, and nothing here reads archived histories.
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: {
      archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    },
    // publicClient is left out on purpose: the worker service then finds the frontend through
    // membership and dials it with the systemWorker TLS settings below.
    dynamicConfigClient: { filepath: dynamicFile, pollInterval: '10s' },
  };
}

/**
 * mTLS on the frontend: clients must present a certificate signed by the cluster's CA. Between
 * the services, mTLS too unless turned off: the same certificate serves and dials, so a process
 * without it cannot join the cluster's gRPC traffic (membership gossip is covered by
 * system.enableRingpopTLS in the dynamic config).
 */
function tlsConfig({ certs, internodeTls }: ConfigInput): object {
  const ca = [certs.ca];
  return {
    frontend: {
      server: {
        certFile: certs.frontend.cert,
        keyFile: certs.frontend.key,
        requireClientAuth: true,
        clientCaFiles: ca,
      },
      client: { serverName: FRONTEND_SERVER_NAME, rootCaFiles: ca },
    },
    systemWorker: {
      certFile: certs.systemWorker.cert,
      keyFile: certs.systemWorker.key,
      client: { serverName: FRONTEND_SERVER_NAME, rootCaFiles: ca },
    },
    ...(internodeTls
      ? {
          internode: {
            server: {
              certFile: certs.internode.cert,
              keyFile: certs.internode.key,
              requireClientAuth: true,
              clientCaFiles: ca,
            },
            client: { serverName: INTERNODE_SERVER_NAME, rootCaFiles: ca },
          },
        }
      : {}),
    // The servers re-read the files, so renewed certificates are picked up without a restart.
    refreshInterval: '1m',
  };
}

/** One value for every namespace and task queue, as the dynamic config file writes it. */
const everywhere = (value: unknown) => [{ value, constraints: {} }];

function dynamicConfig({ internodeTls }: ConfigInput): object {
  return {
    // From development-sql.yaml: IDs up to 255 characters, and the APIs the SDK uses
    // (update-with-start is a multi-operation).
    'limit.maxIDLength': everywhere(255),
    'frontend.enableExecuteMultiOperation': everywhere(true),
    'frontend.enableUpdateWorkflowExecution': everywhere(true),
    // Offline machines: no call home to check for a newer server.
    'frontend.enableServerVersionCheck': everywhere(false),
    // Search attributes are registered just before the app starts: read them from the database
    // instead of a cache that would refresh a minute later. A test cluster's trade-off; the
    // setting's own documentation says to leave it off in production.
    'system.forceSearchAttributesCacheRefreshOnRead': everywhere(true),
    ...(internodeTls ? { 'system.enableRingpopTLS': everywhere(true) } : {}),
  };
}
