import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A throwaway PKI made with the openssl command line, for TLS and mTLS tests: CAs, and server and
 * client certificates they sign, with any validity window (an expired one too, which node's
 * crypto cannot make). EC P-256 keys: generated in milliseconds, and what rustls (the worker's
 * TLS) and node both accept. Call `remove()` in afterAll.
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
  /** Subject alternative names; default the loopback names. */
  altNames?: string[];
  notBefore?: Date;
  notAfter?: Date;
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
    createCa: (name) => createCa(dir, name),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function createCa(root: string, name: string): CertificateAuthority {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, 'issued'), { recursive: true });
  writeFileSync(path.join(dir, 'index.txt'), '');
  writeFileSync(path.join(dir, 'serial'), '1000\n');
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
      '30',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  const certPath = path.join(dir, 'ca.pem');
  return {
    name,
    certPath,
    certPem: readFileSync(certPath, 'utf8'),
    issue: (leaf, options = {}) => issue(dir, leaf, options),
  };
}

function issue(dir: string, name: string, options: IssueOptions): Leaf {
  const now = Date.now();
  const notBefore = options.notBefore ?? new Date(now - DAY_MS);
  const notAfter = options.notAfter ?? new Date(now + 7 * DAY_MS);
  const altNames = options.altNames ?? ['DNS:localhost', 'IP:127.0.0.1'];
  writeFileSync(
    path.join(dir, `${name}.ext`),
    [
      'basicConstraints = CA:FALSE',
      'keyUsage = critical,digitalSignature',
      'extendedKeyUsage = serverAuth,clientAuth',
      `subjectAltName = ${altNames.join(',')}`,
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
      `/CN=${name}`,
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
