import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The one way the harness makes certificates: the openssl command line (node's crypto verifies
 * certificates but cannot issue them), CAs and the server and client certificates they sign, with
 * any validity window (an expired one too). EC P-256 keys: generated in milliseconds, and what
 * rustls (the worker's TLS) and node both accept; unencrypted (servers read them unattended) and
 * readable only by their owner.
 *
 * createPki() is a throwaway PKI for TLS and mTLS tests (call `remove()` in afterAll); the
 * development cluster keeps its CA in a folder of its own (openCa, dev/cluster/certs.ts).
 */
export interface Pki {
  dir: string;
  createCa(name: string): CertificateAuthority;
  remove(): void;
}

export interface CertificateAuthority {
  name: string;
  certPath: string;
  certPem: string;
  /** Signs a leaf certificate for both server and client use. */
  issue(name: string, options?: IssueOptions): Leaf;
}

export interface IssueOptions {
  /** Subject alternative names; default the loopback names. An empty list: none. */
  altNames?: string[];
  notBefore?: Date;
  notAfter?: Date;
  /** The subject's common name; default the certificate's name. */
  commonName?: string;
  /** Default both serverAuth and clientAuth. */
  extendedKeyUsage?: string[];
}

export interface Leaf {
  certPath: string;
  keyPath: string;
  certPem: string;
  keyPem: string;
}

const DAY_MS = 86_400_000;

export function createPki(): Pki {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'order-payments-pki-'));
  return {
    dir,
    createCa: (name) => openCa(path.join(dir, name), { commonName: name, renew: true }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface CaOptions {
  commonName: string;
  /** Make a new CA even if `dir` holds one. Default: keep the one there. */
  renew?: boolean;
  /** Default 30. */
  validDays?: number;
}

/**
 * The CA whose files (ca.pem, ca.key) and openssl bookkeeping live in `dir`, made there unless
 * `dir` holds one already; certificates it issues are written beside them.
 */
export function openCa(dir: string, options: CaOptions): CertificateAuthority {
  mkdirSync(path.join(dir, 'issued'), { recursive: true, mode: 0o700 });
  writeCaConfig(dir);
  const certPath = path.join(dir, 'ca.pem');
  if (options.renew || !existsSync(certPath) || !existsSync(path.join(dir, 'ca.key'))) {
    openssl(
      [
        'req',
        '-x509',
        ...EC_KEY,
        '-keyout',
        'ca.key',
        '-out',
        'ca.pem',
        '-days',
        String(options.validDays ?? 30),
        '-subj',
        `/CN=${options.commonName}`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ],
      dir,
    );
  }
  return {
    name: options.commonName,
    certPath,
    certPem: readFileSync(certPath, 'utf8'),
    issue: (leaf, issueOptions = {}) => issue(dir, leaf, issueOptions),
  };
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(
      `openssl ${args[0]} failed: ${stderr || (error as Error).message} (install openssl: apt-get install -y openssl)`,
      { cause: error },
    );
  }
  const keyIndex = args.indexOf('-keyout');
  if (keyIndex >= 0) chmodSync(path.join(cwd, args[keyIndex + 1]!), 0o600);
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** What `openssl ca` needs beside the CA; kept when there (its index lists what was issued). */
function writeCaConfig(dir: string): void {
  const index = path.join(dir, 'index.txt');
  if (!existsSync(index)) writeFileSync(index, '');
  const serial = path.join(dir, 'serial');
  if (!existsSync(serial)) writeFileSync(serial, '1000\n');
  // `openssl ca` rather than `x509 -req`: only it takes arbitrary start and end dates (OpenSSL 3.0).
  writeFileSync(
    path.join(dir, 'ca.cnf'),
    [
      '[ca]',
      'default_ca = local',
      '[local]',
      `dir = ${dir}`,
      'database = $dir/index.txt',
      'new_certs_dir = $dir/issued',
      'serial = $dir/serial',
      'default_md = sha256',
      'policy = anything',
      'unique_subject = no',
      'email_in_dn = no',
      '[anything]',
      'commonName = supplied',
      '',
    ].join('\n'),
  );
}

function issue(dir: string, name: string, options: IssueOptions): Leaf {
  const now = Date.now();
  const notBefore = options.notBefore ?? new Date(now - DAY_MS);
  const notAfter = options.notAfter ?? new Date(now + 7 * DAY_MS);
  const altNames = options.altNames ?? ['DNS:localhost', 'IP:127.0.0.1'];
  const keyUsage = options.extendedKeyUsage ?? ['serverAuth', 'clientAuth'];
  writeFileSync(
    path.join(dir, `${name}.ext`),
    [
      'basicConstraints = critical,CA:FALSE',
      'keyUsage = critical,digitalSignature',
      `extendedKeyUsage = ${keyUsage.join(',')}`,
      ...(altNames.length ? [`subjectAltName = ${altNames.join(',')}`] : []),
      '',
    ].join('\n'),
  );
  openssl(
    [
      'req',
      '-new',
      ...EC_KEY,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${options.commonName ?? name}`,
    ],
    dir,
  );
  openssl(
    [
      'ca',
      '-batch',
      '-notext',
      '-config',
      'ca.cnf',
      '-cert',
      'ca.pem',
      '-keyfile',
      'ca.key',
      '-in',
      `${name}.csr`,
      '-out',
      `${name}.pem`,
      '-extfile',
      `${name}.ext`,
      '-startdate',
      asn1Time(notBefore),
      '-enddate',
      asn1Time(notAfter),
    ],
    dir,
  );
  const certPath = path.join(dir, `${name}.pem`);
  const keyPath = path.join(dir, `${name}.key`);
  return {
    certPath,
    keyPath,
    certPem: readFileSync(certPath, 'utf8'),
    keyPem: readFileSync(keyPath, 'utf8'),
  };
}

/** YYYYMMDDHHMMSSZ, as `openssl ca -startdate` takes it. */
function asn1Time(date: Date): string {
  return `${date.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
}
