import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * The cluster's own certificate authority and the certificates it signs, made with openssl
 * (Node's crypto verifies certificates but cannot issue them). One CA for everything, as a small
 * install with cert-manager or a corporate PKI would have; in production each would come from
 * that PKI and be mounted from a secret (docs/temporal-cluster.md).
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
  subject: string;
  extensions: string[];
}

const LEAVES: Leaf[] = [
  {
    name: 'frontend',
    file: 'frontend',
    subject: `/CN=${FRONTEND_SERVER_NAME}`,
    // localhost and 127.0.0.1 too, so a client that verifies the address it dialled also works.
    extensions: [
      `subjectAltName=DNS:${FRONTEND_SERVER_NAME},DNS:localhost,IP:127.0.0.1`,
      'extendedKeyUsage=serverAuth',
    ],
  },
  {
    name: 'internode',
    file: 'internode',
    subject: `/CN=${INTERNODE_SERVER_NAME}`,
    // Each service is server and client of the others with the same certificate.
    extensions: [
      `subjectAltName=DNS:${INTERNODE_SERVER_NAME},DNS:localhost,IP:127.0.0.1`,
      'extendedKeyUsage=serverAuth,clientAuth',
    ],
  },
  {
    name: 'systemWorker',
    file: 'system-worker',
    subject: '/CN=temporal-system-worker',
    extensions: ['extendedKeyUsage=clientAuth'],
  },
  {
    name: 'client',
    file: 'client',
    subject: '/CN=order-payments',
    extensions: ['extendedKeyUsage=clientAuth'],
  },
];

/** Makes the CA and certificates in `dir`, keeping those that exist and are not near expiry. */
export async function ensureClusterCerts(dir: string): Promise<ClusterCerts> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const ca = path.join(dir, 'ca.pem');
  const caKey = path.join(dir, 'ca.key');
  const files = (file: string): CertFiles => ({
    cert: path.join(dir, `${file}.pem`),
    key: path.join(dir, `${file}.key`),
  });

  // A new CA invalidates every certificate it signed before: remake them all with it.
  const renewCa = !(await stillValid(ca)) || !(await exists(caKey));
  if (renewCa) {
    await openssl([
      'req',
      '-x509',
      ...newKeyArgs(caKey),
      '-out',
      ca,
      '-days',
      String(VALID_DAYS),
      '-subj',
      '/CN=order-payments dev cluster CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
  }
  for (const leaf of LEAVES) {
    const { cert, key } = files(leaf.file);
    if (!renewCa && (await stillValid(cert)) && (await exists(key))) continue;
    const csr = path.join(dir, `${leaf.file}.csr`);
    const ext = path.join(dir, `${leaf.file}.ext`);
    await fs.writeFile(
      ext,
      [
        'basicConstraints=critical,CA:FALSE',
        'keyUsage=critical,digitalSignature',
        ...leaf.extensions,
      ]
        .map((line) => `${line}\n`)
        .join(''),
    );
    await openssl(['req', '-new', ...newKeyArgs(key), '-out', csr, '-subj', leaf.subject]);
    await openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca,
      '-CAkey',
      caKey,
      '-CAcreateserial',
      '-out',
      cert,
      '-days',
      String(VALID_DAYS),
      '-extfile',
      ext,
    ]);
    await Promise.all([fs.rm(csr), fs.rm(ext)]);
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

/** A new P-256 key, unencrypted (the server reads it unattended), readable only by its owner. */
function newKeyArgs(keyFile: string): string[] {
  return ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', keyFile];
}

async function openssl(args: string[]): Promise<void> {
  try {
    await promisify(execFile)('openssl', args, { timeout: 30_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(
      `openssl ${args[0]} failed: ${stderr || (error as Error).message} (install openssl: apt-get install -y openssl)`,
      { cause: error },
    );
  }
  const keyIndex = args.indexOf('-keyout');
  if (keyIndex >= 0) await fs.chmod(args[keyIndex + 1]!, 0o600);
}

async function stillValid(certFile: string): Promise<boolean> {
  try {
    const cert = new X509Certificate(await fs.readFile(certFile));
    return Date.parse(cert.validTo) - Date.now() > RENEW_BEFORE_DAYS * DAY_MS;
  } catch {
    return false;
  }
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
