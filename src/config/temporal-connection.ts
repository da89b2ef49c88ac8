import { existsSync } from 'node:fs';
import {
  type ClientConfigProfile,
  type ConfigDataSource,
  loadClientConfig,
  loadClientConfigProfile,
  toClientOptions,
} from '@temporalio/envconfig';
import {
  type ConnectionSecurity,
  Secret,
  type TemporalConnectionSettings,
} from '../temporal/connection';
import { checkTls, type Label, problemWith } from './temporal-tls';

/**
 * `@temporalio/envconfig` forgives too much for a payment system: TEMPORAL_TLS=yes means plain
 * text, a certificate without its key is dropped. So every value is checked here at start-up.
 */

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
  const file = vars.TEMPORAL_CONFIG_FILE ?? 'the per-user temporal.toml';
  const fail = (problem: string) => new TemporalSettingsError([...problems, problem]);
  // envconfig treats a missing file as "no profiles": named explicitly, it is a mistake.
  if (vars.TEMPORAL_CONFIG_FILE !== undefined && !existsSync(vars.TEMPORAL_CONFIG_FILE)) {
    throw fail(`TEMPORAL_CONFIG_FILE: ${vars.TEMPORAL_CONFIG_FILE} cannot be read`);
  }
  let known: string[] = [];
  let profile: ClientConfigProfile;
  try {
    // Strict: a misspelt key (`adress`) would otherwise drop its setting silently.
    const strict = { overrideEnvVars: vars, configFileStrict: true };
    known = Object.keys(loadClientConfig(strict).profiles);
    profile = loadClientConfigProfile(strict);
  } catch (error) {
    throw fail(profileProblem(error, vars, file, known));
  }
  const fileUsed = known.length > 0;
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

function profileProblem(
  error: unknown,
  env: Record<string, string>,
  file: string,
  known: string[],
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
    const there = known.length > 0 ? ` (profiles there: ${known.join(', ')})` : '';
    return `TEMPORAL_PROFILE: no profile '${env.TEMPORAL_PROFILE}' in ${file}${there}; TEMPORAL_CONFIG_FILE names the file`;
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
