import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import type { ConnectionOptions } from '@temporalio/client';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import {
  type ClientConfigProfile,
  type ConfigDataSource,
  loadClientConfig,
  loadClientConfigProfile,
  toClientOptions,
} from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';

/**
 * `@temporalio/envconfig` reads the settings as the Temporal CLI does (a temporal.toml profile,
 * then the TEMPORAL_* variables) and makes the SDK's connection options. It forgives too much for
 * a payment system: TEMPORAL_TLS=yes means plain text, a certificate without its key is dropped,
 * a wrong file shows as a handshake error minutes later. So every value is checked here once, at
 * start-up, each problem naming the variable or profile key and never a secret.
 */

/** JSON, `util.inspect` and string conversion all redact it, so a logged config leaks nothing. */
export class Secret<T> {
  readonly #value: T;
  constructor(value: T) {
    this.#value = value;
  }
  reveal(): T {
    return this.#value;
  }
  toJSON = () => '[redacted]';
  toString = () => '[redacted]';
  [inspect.custom] = () => '[redacted]';
}

/** envconfig's connection options but the address: TLS, API key, gRPC headers. */
export type ConnectionSecurity = Pick<NativeConnectionOptions, 'tls' | 'apiKey' | 'metadata'>;

export interface ClientCertificate {
  subject: string;
  notAfter: Date;
  /** The setting that gave it, e.g. `TEMPORAL_TLS_CLIENT_CERT_PATH`. */
  name: string;
  /** The same with its file, e.g. `TEMPORAL_TLS_CLIENT_CERT_PATH=/etc/app.pem`. */
  from: string;
}

export interface TemporalConnectionSettings {
  /** undefined: the embedded dev server. */
  address: string | undefined;
  namespace: string | undefined;
  /** What the TLS options hold, without a secret; undefined: plain text. */
  tls: { serverName?: string; serverCa?: string; clientCert?: ClientCertificate } | undefined;
  apiKey: boolean;
  security: Secret<ConnectionSecurity>;
  profile: { name: string; file: string } | undefined;
  /** One line, safe to log: how it connects. */
  summary: string;
}

export class TemporalSettingsError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid Temporal connection settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'TemporalSettingsError';
  }
}

/** Reads and checks the settings in `env`; throws TemporalSettingsError with every problem. */
export function loadTemporalConnection(env: NodeJS.ProcessEnv): TemporalConnectionSettings {
  const problems: string[] = [];
  const vars = normalisedEnv(env, problems);
  const file = vars.TEMPORAL_CONFIG_FILE ?? defaultConfigFile(vars);
  const fail = (problem: string) => new TemporalSettingsError([...problems, problem]);
  // envconfig treats a missing file as "no profiles": named explicitly, it is a mistake.
  if (vars.TEMPORAL_CONFIG_FILE !== undefined && !existsSync(vars.TEMPORAL_CONFIG_FILE)) {
    throw fail(`TEMPORAL_CONFIG_FILE: ${vars.TEMPORAL_CONFIG_FILE} cannot be read`);
  }
  let profile: ClientConfigProfile;
  try {
    // Strict: a misspelt key (`adress`) would otherwise drop its setting silently.
    profile = loadClientConfigProfile({ overrideEnvVars: vars, configFileStrict: true });
  } catch (error) {
    throw fail(profileProblem(error, vars, file));
  }
  const fileUsed = file !== undefined && existsSync(file);
  const profileName = vars.TEMPORAL_PROFILE ?? 'default';
  const settingName = (variable: string, key: string) =>
    vars[variable] !== undefined || !fileUsed
      ? variable
      : `${key} of profile '${profileName}' in ${file}`;
  const source = (variable: string, key: string, from: ConfigDataSource): Label => {
    const kind = 'path' in from ? 'PATH' : 'DATA';
    const name = settingName(`${variable}_${kind}`, `tls.${key}_${kind.toLowerCase()}`);
    return 'path' in from
      ? { name, path: from.path, from: `${name}=${from.path}` }
      : { name, from: name };
  };
  const labels = {
    serverCA:
      profile.tls?.serverCACert &&
      source('TEMPORAL_TLS_SERVER_CA_CERT', 'server_ca_cert', profile.tls.serverCACert),
    cert:
      profile.tls?.clientCert &&
      source('TEMPORAL_TLS_CLIENT_CERT', 'client_cert', profile.tls.clientCert),
    key:
      profile.tls?.clientKey &&
      source('TEMPORAL_TLS_CLIENT_KEY', 'client_key', profile.tls.clientKey),
  };

  let security: ConnectionSecurity = {};
  try {
    const { address: _address, ...rest } = toClientOptions(profile).connectionOptions;
    security = rest;
  } catch (error) {
    const { code, path: unread } = error as NodeJS.ErrnoException;
    const label = Object.values(labels).find((l) => l?.path !== undefined && l.path === unread);
    if (!label) throw error;
    problems.push(problemWith(label, `cannot read the file: ${code ?? 'unreadable'}`));
  }
  const tls = security.tls ? checkTls(security.tls, profile, labels, problems) : undefined;
  if (profile.tls?.clientCert && !profile.tls.clientKey) {
    problems.push(
      `${settingName('TEMPORAL_TLS_CLIENT_KEY_PATH', 'tls.client_key_path')}: a client certificate needs its key (TEMPORAL_TLS_CLIENT_KEY_PATH or _DATA)`,
    );
  } else if (profile.tls?.clientKey && !profile.tls.clientCert) {
    problems.push(
      `${settingName('TEMPORAL_TLS_CLIENT_CERT_PATH', 'tls.client_cert_path')}: a client key needs its certificate (TEMPORAL_TLS_CLIENT_CERT_PATH or _DATA)`,
    );
  }
  if (profile.address === undefined && (security.tls || security.apiKey !== undefined)) {
    problems.push(
      'TEMPORAL_ADDRESS: TLS or an API key is configured but no address: set TEMPORAL_ADDRESS ' +
        '(or address in the profile); the embedded dev server speaks plain text',
    );
  }
  if (problems.length > 0) throw new TemporalSettingsError(problems);

  const settings = {
    address: profile.address,
    namespace: profile.namespace,
    tls,
    apiKey: security.apiKey !== undefined,
    security: new Secret(security),
    profile: fileUsed ? { name: profileName, file } : undefined,
  };
  return { ...settings, summary: summarise(settings, Object.keys(security.metadata ?? {})) };
}

/** Options for `Connection.connect` / `Connection.lazy` of @temporalio/client. */
export function clientConnectionOptions(
  settings: Pick<TemporalConnectionSettings, 'security'> | undefined,
  options: { address: string; connectTimeout?: number },
): ConnectionOptions {
  return { ...settings?.security.reveal(), ...options };
}

/** Options for `NativeConnection.connect` (workers). */
export function nativeConnectionOptions(
  settings: Pick<TemporalConnectionSettings, 'security'> | undefined,
  options: { address: string },
): NativeConnectionOptions {
  return { ...settings?.security.reveal(), ...options };
}

/** A setting that gave a PEM, and its file. */
interface Label {
  name: string;
  path?: string;
  from: string;
}

/** The setting first (it is what to fix), its file last. */
function problemWith(label: Label, text: string): string {
  return `${label.name}: ${text}${label.path ? ` (${label.path})` : ''}`;
}

/** envconfig reads the files but checks nothing in them: a bad one would fail the handshake. */
function checkTls(
  options: TLSConfig | true,
  profile: ClientConfigProfile,
  labels: Record<'serverCA' | 'cert' | 'key', Label | undefined>,
  problems: string[],
): NonNullable<TemporalConnectionSettings['tls']> {
  const tls = options === true ? {} : options;
  const result: NonNullable<TemporalConnectionSettings['tls']> = {
    serverName: profile.tls?.serverName,
  };
  if (tls.serverRootCACertificate && labels.serverCA) {
    if (certificates(tls.serverRootCACertificate, labels.serverCA, problems)) {
      result.serverCa = labels.serverCA.name;
    }
  }
  const pair = tls.clientCertPair;
  if (!pair || !labels.cert || !labels.key) return result;
  const certificate = certificates(pair.crt, labels.cert, problems)?.[0];
  if (certificate) {
    const notAfter = new Date(certificate.validTo);
    const notBefore = new Date(certificate.validFrom);
    if (notAfter.getTime() < Date.now()) {
      problems.push(
        problemWith(labels.cert, `the client certificate expired on ${notAfter.toISOString()}`),
      );
    } else if (notBefore.getTime() > Date.now()) {
      problems.push(
        problemWith(
          labels.cert,
          `the client certificate is not valid before ${notBefore.toISOString()}`,
        ),
      );
    }
    const subject = certificate.subject.replace(/\n/g, ', ');
    result.clientCert = { subject, notAfter, name: labels.cert.name, from: labels.cert.from };
  }
  let key: KeyObject | undefined;
  try {
    key = createPrivateKey({ key: Buffer.from(pair.key), format: 'pem' });
  } catch {
    // Not the crypto error's text: this message must stay key-free.
    problems.push(
      problemWith(labels.key, 'not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)'),
    );
  }
  if (key && certificate && !certificate.checkPrivateKey(key)) {
    problems.push(
      problemWith(
        labels.key,
        `this key does not belong to the client certificate ${labels.cert.from}`,
      ),
    );
  }
  return result;
}

/** Every certificate of a PEM bundle; undefined (and a problem) when there is none or one is broken. */
function certificates(
  pem: Uint8Array,
  label: Label,
  problems: string[],
): X509Certificate[] | undefined {
  const blocks = Buffer.from(pem)
    .toString('utf8')
    .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!blocks) {
    problems.push(problemWith(label, 'no PEM certificate in it (-----BEGIN CERTIFICATE-----)'));
    return undefined;
  }
  try {
    return blocks.map((block) => new X509Certificate(block));
  } catch {
    problems.push(problemWith(label, 'a certificate in it is malformed'));
    return undefined;
  }
}

const BOOLEANS = { true: /^(1|t|true)$/i, false: /^(0|f|false)$/i };

/**
 * Blank TEMPORAL_* values count as unset, as for every other setting; booleans must be booleans,
 * since envconfig reads anything but `1`/`true` as false.
 */
function normalisedEnv(env: NodeJS.ProcessEnv, problems: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (!name.startsWith('TEMPORAL_')) out[name] = value;
    // An empty TEMPORAL_GRPC_META_<X> removes a header the profile sets: envconfig's meaning.
    else if (value.trim() !== '' || name.startsWith('TEMPORAL_GRPC_META_'))
      out[name] = value.trim();
  }
  for (const name of ['TEMPORAL_TLS', 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION']) {
    const value = out[name];
    if (value === undefined) continue;
    if (BOOLEANS.true.test(value)) out[name] = 'true';
    else if (BOOLEANS.false.test(value)) out[name] = 'false';
    else {
      problems.push(`${name}: must be true or false (or 1/0), not ${JSON.stringify(value)}`);
      delete out[name];
    }
  }
  if (out.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === 'true') {
    // envconfig reads it, but the TypeScript SDK's TLS options (1.24) have no such switch.
    problems.push(
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: the TypeScript SDK cannot skip host verification; ' +
        "set TEMPORAL_TLS_SERVER_NAME to a name in the server's certificate instead",
    );
  }
  return out;
}

/** envconfig's default file (not exported by it), for messages and the summary. */
function defaultConfigFile(env: Record<string, string>): string | undefined {
  let dir: string | undefined;
  if (os.platform() === 'win32') dir = env.APPDATA;
  else if (os.platform() === 'darwin')
    dir = env.HOME && path.join(env.HOME, 'Library', 'Application Support');
  else if (env.XDG_CONFIG_HOME)
    dir = path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : undefined;
  else dir = env.HOME && path.join(env.HOME, '.config');
  return dir ? path.join(dir, 'temporalio', 'temporal.toml') : undefined;
}

function profileProblem(
  error: unknown,
  env: Record<string, string>,
  file: string | undefined,
): string {
  const where = env.TEMPORAL_CONFIG_FILE !== undefined ? 'TEMPORAL_CONFIG_FILE' : 'temporal.toml';
  const { message, line, column, code } = error as {
    message?: unknown;
    line?: unknown;
    column?: unknown;
    code?: string;
  };
  const text = typeof message === 'string' ? message : '';
  if (typeof line === 'number' && typeof column === 'number') {
    // Not the parser's message: it quotes the offending line, which may hold an API key.
    return `${where} (${file}): not valid TOML at line ${line}, column ${column}`;
  }
  if (/^Profile '.*' not found/.test(text)) {
    if (file === undefined || !existsSync(file)) {
      return `TEMPORAL_PROFILE: no profile '${env.TEMPORAL_PROFILE}': no temporal.toml at ${file ?? '(no HOME to look in)'}; set TEMPORAL_CONFIG_FILE`;
    }
    const known = Object.keys(loadClientConfig({ overrideEnvVars: env }).profiles);
    const there = known.length > 0 ? ` (profiles there: ${known.join(', ')})` : '';
    return `TEMPORAL_PROFILE: no profile '${env.TEMPORAL_PROFILE}' in ${file}${there}`;
  }
  const both = /^Cannot specify both (\w+)_path and \w+_data/.exec(text);
  if (both) {
    const variable = `TEMPORAL_TLS_${both[1]!.toUpperCase()}`;
    return `${variable}_PATH / ${variable}_DATA (or ${both[1]}_path / _data in ${where}): give one, not both`;
  }
  if (text.startsWith('Validation error: ')) return `${where} (${file}): ${text.slice(18)}`;
  return `${where} (${file}): cannot be read${code ? ` (${code})` : ''}`;
}

function summarise(
  settings: Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'profile'>,
  headers: string[],
): string {
  // Most telling first: a report may cut a long line short.
  const { tls, profile } = settings;
  const parts = settings.apiKey ? ['API key'] : [];
  if (!tls) parts.push('plain text');
  else {
    const cert = tls.clientCert;
    const details = [
      ...(cert
        ? [
            `client certificate ${cert.subject} (expires ${cert.notAfter.toISOString().slice(0, 10)})`,
          ]
        : []),
      tls.serverCa ? `server CA from ${tls.serverCa}` : 'system CAs',
      ...(tls.serverName ? [`server name ${tls.serverName}`] : []),
    ];
    parts.push(`${cert ? 'mTLS' : 'TLS'} (${details.join(', ')})`);
  }
  if (headers.length > 0) parts.push(`gRPC headers ${headers.join(', ')}`);
  if (profile) parts.push(`profile '${profile.name}' of ${profile.file}`);
  return parts.join('; ');
}
