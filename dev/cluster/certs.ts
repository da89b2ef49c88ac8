import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { openCa, type IssueOptions } from '../../harness/certificates';

/**
 * The cluster's own certificate authority and the certificates it signs (harness/certificates.ts
 * makes them). One CA for everything, as a small install with cert-manager or a corporate PKI
 * would have; in production each would come from that PKI and be mounted from a secret
 * (docs/temporal-cluster.md).
 *
 *   frontend       server certificate of the frontend's public gRPC/HTTP port
 *   internode      history/matching/frontend/worker between themselves: server and client
 *   system-worker  the worker service's client certificate towards the frontend
 *   client         the application's client certificate (HTTP server, workers, ops, doctor)
 */

/** The name clients verify the frontend certificate against (TEMPORAL_TLS_SERVER_NAME). */
export const FRONTEND_SERVER_NAME = 'temporal-frontend';
/** The name the services verify each other's certificate against. */
export const INTERNODE_SERVER_NAME = 'temporal-internode';

export interface CertFiles {
  cert: string;
  key: string;
}

export interface ClusterCerts {
  dir: string;
  ca: string;
  frontend: CertFiles;
  internode: CertFiles;
  systemWorker: CertFiles;
  client: CertFiles;
}

// Long enough for a dev machine's lifetime of restarts, short enough that a leaked test key is
// soon worthless; a certificate within RENEW_BEFORE_DAYS of its end is made again.
const VALID_DAYS = 90;
const RENEW_BEFORE_DAYS = 7;
const DAY_MS = 24 * 60 * 60 * 1000;

interface Leaf {
  name: keyof Omit<ClusterCerts, 'dir' | 'ca'>;
  file: string;
  options: IssueOptions;
}

const LEAVES: Leaf[] = [
  {
    name: 'frontend',
    file: 'frontend',
    // localhost and 127.0.0.1 too, so a client that verifies the address it dialled also works.
    options: {
      commonName: FRONTEND_SERVER_NAME,
      altNames: [`DNS:${FRONTEND_SERVER_NAME}`, 'DNS:localhost', 'IP:127.0.0.1'],
      extendedKeyUsage: ['serverAuth'],
    },
  },
  {
    name: 'internode',
    file: 'internode',
    // Each service is server and client of the others with the same certificate.
    options: {
      commonName: INTERNODE_SERVER_NAME,
      altNames: [`DNS:${INTERNODE_SERVER_NAME}`, 'DNS:localhost', 'IP:127.0.0.1'],
      extendedKeyUsage: ['serverAuth', 'clientAuth'],
    },
  },
  {
    name: 'systemWorker',
    file: 'system-worker',
    options: {
      commonName: 'temporal-system-worker',
      altNames: [],
      extendedKeyUsage: ['clientAuth'],
    },
  },
  {
    name: 'client',
    file: 'client',
    options: { commonName: 'order-payments', altNames: [], extendedKeyUsage: ['clientAuth'] },
  },
];

/** Makes the CA and certificates in `dir`, keeping those that exist and are not near expiry. */
export async function ensureClusterCerts(dir: string): Promise<ClusterCerts> {
  const files = (file: string): CertFiles => ({
    cert: path.join(dir, `${file}.pem`),
    key: path.join(dir, `${file}.key`),
  });
  const ca = path.join(dir, 'ca.pem');
  // A new CA invalidates every certificate it signed before: remake them all with it.
  const renewCa = !stillValid(ca) || !existsSync(path.join(dir, 'ca.key'));
  const authority = openCa(dir, {
    commonName: 'order-payments dev cluster CA',
    renew: renewCa,
    validDays: VALID_DAYS,
  });
  for (const leaf of LEAVES) {
    const { cert, key } = files(leaf.file);
    if (!renewCa && stillValid(cert) && existsSync(key)) continue;
    authority.issue(leaf.file, {
      ...leaf.options,
      notAfter: new Date(Date.now() + VALID_DAYS * DAY_MS),
    });
  }
  return {
    dir,
    ca,
    frontend: files('frontend'),
    internode: files('internode'),
    systemWorker: files('system-worker'),
    client: files('client'),
  };
}

function stillValid(certFile: string): boolean {
  try {
    const cert = new X509Certificate(readFileSync(certFile));
    return Date.parse(cert.validTo) - Date.now() > RENEW_BEFORE_DAYS * DAY_MS;
  } catch {
    return false;
  }
}
