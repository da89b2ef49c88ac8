import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import type { ConnectionOptions } from '@temporalio/client';
import {
  type ClientConfigProfile,
  type ConfigDataSource,
  loadClientConfig,
  loadClientConfigProfile,
} from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';

/**
 * How every process of this system reaches Temporal: the HTTP server, the workers, the operator
 * CLIs, the doctor, the set-up command and the benchmarks. Settings are read the way the Temporal
 * CLI reads them, through `@temporalio/envconfig`: a `temporal.toml` profile (TEMPORAL_CONFIG_FILE,
 * TEMPORAL_PROFILE), overridden by the TEMPORAL_* variables. So one profile serves `temporal`
 * commands and this app alike, and Temporal Cloud's and a secured cluster's documentation apply
 * as written.
 *
 * envconfig reads files lazily and forgives a lot (TEMPORAL_TLS=maybe means "off", a missing
 * certificate surfaces as a handshake error minutes later, a key without its certificate is
 * dropped). Here every value is read and checked once, at start-up, and each problem names the
 * variable or profile key to fix. Secret values (API key, private key, gRPC headers) never appear
 * in a message, and are wrapped so a log line that serialises the configuration shows them
 * redacted.
 */

/** A value that must not reach a log: JSON, `util.inspect` and string conversion all redact it. */
export class Secret<T> {
  readonly #value: T;
  constructor(value: T) {
    this.#value = value;
  }
  /** The value itself, for the SDK's connection options only. */
  reveal(): T {
    return this.#value;
  }
  toJSON(): string {
    return '[redacted]';
  }
  toString(): string {
    return '[redacted]';
  }
  [inspect.custom](): string {
    return '[redacted]';
  }
}

/** A PEM read from a variable or a profile key, with where it came from (for messages). */
export interface PemSource {
  pem: Uint8Array;
  /** The variable or profile key that gave it, e.g. `TEMPORAL_TLS_SERVER_CA_CERT_PATH`. */
  name: string;
  /** The same with its file, e.g. `TEMPORAL_TLS_SERVER_CA_CERT_PATH=/etc/ca.pem`. */
  from: string;
}

export interface ClientCertificate extends PemSource {
  subject: string;
  notAfter: Date;
}

export interface TemporalTlsSettings {
  /** Overrides the name checked against the server's certificate (SNI), e.g. a cluster-internal name. */
  serverName?: string;
  /** Trusted CA of the server; unset: the system's roots (Temporal Cloud). */
  serverCa?: PemSource;
  /** mTLS: the client certificate (chain) and its key. */
  clientCert?: ClientCertificate;
  clientKey?: Secret<Uint8Array>;
}

export interface TemporalConnectionSettings {
  /** host:port from TEMPORAL_ADDRESS or the profile; undefined: the embedded dev server. */
  address: string | undefined;
  /** From TEMPORAL_NAMESPACE or the profile; undefined: the app's default. */
  namespace: string | undefined;
  /** undefined: plain text. */
  tls: TemporalTlsSettings | undefined;
  apiKey: Secret<string> | undefined;
  /** gRPC headers (profile `grpc_meta`, TEMPORAL_GRPC_META_*): may carry credentials. */
  metadata: Secret<Record<string, string>> | undefined;
  /** The temporal.toml profile in force, if a file was read. */
  profile: { name: string; file: string } | undefined;
  /** One line, safe to log: where it connects and how, never a secret. */
  summary: string;
}

/** Every problem found in the Temporal settings at once, each naming what to fix. */
export class TemporalSettingsError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid Temporal connection settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'TemporalSettingsError';
  }
}

const ADDRESS = /^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/;
const TRUE = /^(1|t|true)$/i;
const FALSE = /^(0|f|false)$/i;
const BOOLEAN_VARIABLES = ['TEMPORAL_TLS', 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION'] as const;

/**
 * Reads the Temporal connection settings from `env` (a process's environment, passed in by
 * loadConfig) and checks every one of them: certificates and keys are read and parsed, the key
 * must belong to the certificate, dates must be current. Throws TemporalSettingsError.
 */
export function loadTemporalConnection(env: NodeJS.ProcessEnv): TemporalConnectionSettings {
  const problems: string[] = [];
  const envVars = normalisedEnv(env, problems);
  const file = configFilePath(envVars);
  const profileName = envVars.TEMPORAL_PROFILE;
  let profile: ClientConfigProfile = {};
  if (envVars.TEMPORAL_CONFIG_FILE !== undefined && !fileExists(envVars.TEMPORAL_CONFIG_FILE)) {
    // envconfig treats a missing file as "no profiles": named explicitly, it is a mistake.
    problems.push(`TEMPORAL_CONFIG_FILE: ${envVars.TEMPORAL_CONFIG_FILE} cannot be read`);
    throw new TemporalSettingsError(problems);
  }
  try {
    // Strict: a misspelt key (`adress`, `server_ca_cert`) would otherwise drop a setting silently.
    profile = loadClientConfigProfile({ overrideEnvVars: envVars, configFileStrict: true });
  } catch (error) {
    problems.push(profileProblem(error, envVars, file, profileName));
    throw new TemporalSettingsError(problems);
  }

  const fileUsed = file !== undefined && fileExists(file);
  const origin = new Origin(envVars, fileUsed ? file : undefined, profileName ?? 'default');
  const address = profile.address;
  if (address !== undefined && origin.fromFile('TEMPORAL_ADDRESS') && !ADDRESS.test(address)) {
    problems.push(
      `${origin.key('TEMPORAL_ADDRESS', 'address')}: must be host:port, e.g. 127.0.0.1:7233`,
    );
  }
  if (profile.namespace !== undefined && profile.namespace.trim() === '') {
    problems.push(`${origin.key('TEMPORAL_NAMESPACE', 'namespace')}: must not be empty`);
  }
  const apiKey = profile.apiKey === undefined ? undefined : new Secret(profile.apiKey);
  const tls = tlsSettings(profile, origin, problems);
  if (address === undefined && (tls !== undefined || apiKey !== undefined)) {
    problems.push(
      'TEMPORAL_ADDRESS: TLS or an API key is configured but no address: set TEMPORAL_ADDRESS ' +
        '(or address in the profile); the embedded dev server speaks plain text',
    );
  }
  if (problems.length > 0) throw new TemporalSettingsError(problems);

  const settings = {
    address,
    namespace: profile.namespace,
    tls,
    apiKey,
    metadata:
      profile.grpcMeta && Object.keys(profile.grpcMeta).length > 0
        ? new Secret(profile.grpcMeta)
        : undefined,
    profile: fileUsed ? { name: profileName ?? 'default', file } : undefined,
  };
  return { ...settings, summary: summarise(settings) };
}

/** What a connection from this configuration needs besides its address. */
type Settings = Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'metadata'>;

/** Options for `Connection.connect` / `Connection.lazy` of @temporalio/client. */
export function clientConnectionOptions(
  settings: Settings | undefined,
  options: { address: string; connectTimeout?: number },
): ConnectionOptions {
  return {
    address: options.address,
    ...sdkSecurity(settings),
    ...(options.connectTimeout === undefined ? {} : { connectTimeout: options.connectTimeout }),
  };
}

/** Options for `NativeConnection.connect` (workers). */
export function nativeConnectionOptions(
  settings: Settings | undefined,
  options: { address: string },
): NativeConnectionOptions {
  return { address: options.address, ...sdkSecurity(settings) };
}

function sdkSecurity(settings: Settings | undefined) {
  if (!settings) return {};
  const { tls, apiKey, metadata } = settings;
  return {
    ...(tls
      ? {
          tls: {
            serverNameOverride: tls.serverName,
            serverRootCACertificate: tls.serverCa?.pem,
            clientCertPair:
              tls.clientCert && tls.clientKey
                ? { crt: tls.clientCert.pem, key: tls.clientKey.reveal() }
                : undefined,
          },
        }
      : {}),
    ...(apiKey ? { apiKey: apiKey.reveal() } : {}),
    ...(metadata ? { metadata: { ...metadata.reveal() } } : {}),
  };
}

/** Where a PEM came from: the variable or key, and its file (named at the end of messages). */
interface Label {
  name: string;
  path?: string;
  from: string;
}

/** A problem with a PEM: the setting first (it is what to fix), its file last. */
function problemWith(label: Label, text: string): string {
  return `${label.name}: ${text}${label.path ? ` (${label.path})` : ''}`;
}

/**
 * Which variable or profile key gave a value: an environment variable wins over the profile, as
 * in envconfig, so a message names the one that is in force.
 */
class Origin {
  constructor(
    private readonly env: Record<string, string>,
    private readonly file: string | undefined,
    private readonly profile: string,
  ) {}
  fromFile(variable: string): boolean {
    return this.env[variable] === undefined && this.file !== undefined;
  }
  key(variable: string, tomlKey: string): string {
    if (!this.fromFile(variable)) return variable;
    return `${tomlKey} of profile '${this.profile}' in ${this.file}`;
  }
  /** For a path/data pair: the one that is set, and its file when it is a path. */
  source(variable: string, tomlKey: string, source: ConfigDataSource): Label {
    const kind = 'path' in source ? 'PATH' : 'DATA';
    const name = this.key(`${variable}_${kind}`, `${tomlKey}_${kind.toLowerCase()}`);
    return 'path' in source
      ? { name, path: source.path, from: `${name}=${source.path}` }
      : { name, from: name };
  }
}

function tlsSettings(
  profile: ClientConfigProfile,
  origin: Origin,
  problems: string[],
): TemporalTlsSettings | undefined {
  const tls = profile.tls;
  // As envconfig (and Temporal Cloud) would have it: an API key alone means TLS with system roots.
  if (tls === undefined) return profile.apiKey === undefined ? undefined : {};
  if (tls.disabled === true) return undefined;

  const result: TemporalTlsSettings = {};
  if (tls.serverName !== undefined) result.serverName = tls.serverName;
  if (tls.serverCACert) {
    const from = origin.source(
      'TEMPORAL_TLS_SERVER_CA_CERT',
      'tls.server_ca_cert',
      tls.serverCACert,
    );
    const pem = readSource(tls.serverCACert, from, problems);
    if (pem && certificates(pem, from, problems)) {
      result.serverCa = { pem, name: from.name, from: from.from };
    }
  }
  let certificate: X509Certificate | undefined;
  if (tls.clientCert) {
    const from = origin.source('TEMPORAL_TLS_CLIENT_CERT', 'tls.client_cert', tls.clientCert);
    const pem = readSource(tls.clientCert, from, problems);
    certificate = pem ? certificates(pem, from, problems)?.[0] : undefined;
    if (pem && certificate) {
      const notBefore = new Date(certificate.validFrom);
      const notAfter = new Date(certificate.validTo);
      const now = Date.now();
      if (notAfter.getTime() < now) {
        problems.push(
          problemWith(from, `the client certificate expired on ${notAfter.toISOString()}`),
        );
      } else if (notBefore.getTime() > now) {
        problems.push(
          problemWith(
            from,
            `the client certificate is not valid before ${notBefore.toISOString()}`,
          ),
        );
      }
      result.clientCert = {
        pem,
        name: from.name,
        from: from.from,
        subject: certificate.subject.replace(/\n/g, ', '),
        notAfter,
      };
    }
  }
  if (tls.clientKey) {
    const from = origin.source('TEMPORAL_TLS_CLIENT_KEY', 'tls.client_key', tls.clientKey);
    const pem = readSource(tls.clientKey, from, problems);
    let key: KeyObject | undefined;
    if (pem) {
      try {
        key = createPrivateKey({ key: Buffer.from(pem), format: 'pem' });
      } catch {
        // Not the crypto error's text: it is harmless today, but this message must stay key-free.
        problems.push(
          problemWith(from, 'not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)'),
        );
      }
    }
    if (key && certificate && !certificate.checkPrivateKey(key)) {
      problems.push(
        problemWith(
          from,
          `this key does not belong to the client certificate ${result.clientCert?.from}`,
        ),
      );
    }
    if (pem && key) result.clientKey = new Secret(pem);
  }
  if (tls.clientCert && !tls.clientKey) {
    problems.push(
      `${origin.key('TEMPORAL_TLS_CLIENT_KEY_PATH', 'tls.client_key_path')}: a client certificate needs its key (TEMPORAL_TLS_CLIENT_KEY_PATH or _DATA)`,
    );
  } else if (tls.clientKey && !tls.clientCert) {
    problems.push(
      `${origin.key('TEMPORAL_TLS_CLIENT_CERT_PATH', 'tls.client_cert_path')}: a client key needs its certificate (TEMPORAL_TLS_CLIENT_CERT_PATH or _DATA)`,
    );
  }
  return result;
}

function readSource(
  source: ConfigDataSource,
  from: Label,
  problems: string[],
): Uint8Array | undefined {
  if (!('path' in source)) {
    return typeof source.data === 'string' ? Buffer.from(source.data) : source.data;
  }
  try {
    return readFileSync(source.path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    problems.push(problemWith(from, `cannot read the file: ${code}`));
    return undefined;
  }
}

/** Every certificate of a PEM bundle, parsed; undefined (and a problem) when there is none or one is broken. */
function certificates(
  pem: Uint8Array,
  from: Label,
  problems: string[],
): X509Certificate[] | undefined {
  const blocks = Buffer.from(pem)
    .toString('utf8')
    .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!blocks) {
    problems.push(problemWith(from, 'no PEM certificate in it (-----BEGIN CERTIFICATE-----)'));
    return undefined;
  }
  try {
    return blocks.map((block) => new X509Certificate(block));
  } catch {
    problems.push(problemWith(from, 'a certificate in it is malformed'));
    return undefined;
  }
}

/**
 * The environment as envconfig should see it: blank TEMPORAL_* values count as unset (as for
 * every other setting), and booleans are checked, since envconfig reads anything but `1`/`true`
 * as false: TEMPORAL_TLS=yes would quietly mean plain text.
 */
function normalisedEnv(env: NodeJS.ProcessEnv, problems: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    // An empty TEMPORAL_GRPC_META_<X> removes a header the profile sets: envconfig's meaning.
    if (
      name.startsWith('TEMPORAL_') &&
      !name.startsWith('TEMPORAL_GRPC_META_') &&
      value.trim() === ''
    )
      continue;
    out[name] = name.startsWith('TEMPORAL_') ? value.trim() : value;
  }
  for (const name of BOOLEAN_VARIABLES) {
    const value = out[name];
    if (value === undefined) continue;
    if (TRUE.test(value)) out[name] = 'true';
    else if (FALSE.test(value)) out[name] = 'false';
    else {
      problems.push(`${name}: must be true or false (or 1/0), not ${JSON.stringify(value)}`);
      // Reported; the other settings are still read, so every problem shows at once.
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

/** The file envconfig reads: TEMPORAL_CONFIG_FILE, else the per-user default (as the CLI's). */
function configFilePath(env: Record<string, string>): string | undefined {
  if (env.TEMPORAL_CONFIG_FILE !== undefined) return env.TEMPORAL_CONFIG_FILE;
  let dir: string | undefined;
  if (os.platform() === 'win32') dir = env.APPDATA;
  else if (os.platform() === 'darwin')
    dir = env.HOME && path.join(env.HOME, 'Library', 'Application Support');
  else if (env.XDG_CONFIG_HOME)
    dir = path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : undefined;
  else dir = env.HOME && path.join(env.HOME, '.config');
  return dir ? path.join(dir, 'temporalio', 'temporal.toml') : undefined;
}

function fileExists(file: string): boolean {
  try {
    readFileSync(file);
    return true;
  } catch {
    return false;
  }
}

function profileProblem(
  error: unknown,
  env: Record<string, string>,
  file: string | undefined,
  profileName: string | undefined,
): string {
  const where = env.TEMPORAL_CONFIG_FILE !== undefined ? 'TEMPORAL_CONFIG_FILE' : 'temporal.toml';
  const message = (error as { message?: unknown } | null)?.message;
  const text = typeof message === 'string' ? message : '';
  const position = error as { line?: unknown; column?: unknown };
  if (typeof position.line === 'number' && typeof position.column === 'number') {
    // Not the parser's message: it quotes the offending line, which may hold an API key.
    return `${where} (${file}): not valid TOML at line ${position.line}, column ${position.column}`;
  }
  if (/^Profile '.*' not found/.test(text)) {
    let known: string[] = [];
    try {
      known = Object.keys(loadClientConfig({ overrideEnvVars: env }).profiles);
    } catch {
      // The file was read once already; nothing more to say if it cannot be read again.
    }
    if (file === undefined || !fileExists(file)) {
      return `TEMPORAL_PROFILE: no profile '${profileName}': no temporal.toml at ${file ?? '(no HOME to look in)'}; set TEMPORAL_CONFIG_FILE`;
    }
    return (
      `TEMPORAL_PROFILE: no profile '${profileName}' in ${file}` +
      (known.length > 0 ? ` (profiles there: ${known.join(', ')})` : '')
    );
  }
  const both = /^Cannot specify both (\w+)_path and \w+_data/.exec(text);
  if (both) {
    const variable = `TEMPORAL_TLS_${both[1]!.toUpperCase()}`;
    return `${variable}_PATH / ${variable}_DATA (or ${both[1]}_path / _data in ${where}): give one, not both`;
  }
  if (/^Validation error/.test(text))
    return `${where} (${file}): ${text.replace(/^Validation error: /, '')}`;
  const code = (error as NodeJS.ErrnoException).code;
  return `${where} (${file}): cannot be read${code ? ` (${code})` : ''}`;
}

function summarise(settings: Omit<TemporalConnectionSettings, 'summary'>): string {
  // Most telling first: a report may cut a long line short.
  const parts: string[] = [];
  if (settings.apiKey) parts.push('API key');
  const tls = settings.tls;
  if (!tls) parts.push('plain text');
  else {
    const details = [
      ...(tls.clientCert
        ? [
            `client certificate ${tls.clientCert.subject} (expires ${tls.clientCert.notAfter.toISOString().slice(0, 10)})`,
          ]
        : []),
      tls.serverCa ? `server CA from ${tls.serverCa.name}` : 'system CAs',
      ...(tls.serverName ? [`server name ${tls.serverName}`] : []),
    ];
    parts.push(`${tls.clientCert ? 'mTLS' : 'TLS'} (${details.join(', ')})`);
  }
  if (settings.metadata) {
    parts.push(`gRPC headers ${Object.keys(settings.metadata.reveal()).join(', ')}`);
  }
  if (settings.profile)
    parts.push(`profile '${settings.profile.name}' of ${settings.profile.file}`);
  return parts.join('; ');
}
