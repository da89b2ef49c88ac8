import { type Config, ConfigError, embeddedTemporalAddress, loadConfig } from '../config';
import { parseDatabaseUrl } from '../db';
import { codecEndpointRefusal } from '../codec/data-converter';
import { type CheckResult, result } from './types';

export interface ConfigurationCheck {
  results: CheckResult[];
  /** Invalid only under production's rules: read under development's, so the checks still run. */
  config: Config | undefined;
  /** Temporal to check: TEMPORAL_ADDRESS, or in development the embedded dev server's. */
  temporalAddress: string | undefined;
}

/** loadConfig's validation, plus what production allows but should not run with unknowingly. */
export function checkConfiguration(env: NodeJS.ProcessEnv): ConfigurationCheck {
  const production = env.NODE_ENV === 'production';
  let config: Config | undefined;
  const results: CheckResult[] = [];
  try {
    config = loadConfig(env);
    results.push(
      result(
        'configuration',
        'OK',
        production
          ? `production; Temporal at ${config.TEMPORAL_ADDRESS ?? '?'}`
          : `${config.NODE_ENV}; ${config.TEMPORAL_ADDRESS ? `Temporal at ${config.TEMPORAL_ADDRESS}` : `embedded dev server (npm start) at ${embeddedTemporalAddress(config)}`}`,
      ),
    );
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    results.push(
      result(
        'configuration',
        'FAIL',
        error.problems.join('; '),
        'set the variables named (docs/configuration.md); every process refuses to start like this',
      ),
    );
    config = lenient(env);
  }
  if (config) results.push(...productionAdvice(config, production));
  const certificate = config?.temporalConnection.tls?.clientCert;
  if (certificate) results.push(certificateAdvice(certificate));
  const temporalAddress =
    config?.TEMPORAL_ADDRESS ??
    (production || !config ? undefined : embeddedTemporalAddress(config));
  return { results, config, temporalAddress };
}

function lenient(env: NodeJS.ProcessEnv): Config | undefined {
  try {
    return loadConfig({ ...env, NODE_ENV: 'development' });
  } catch {
    return undefined;
  }
}

/** Allowed in production, but not what anybody should run it with unknowingly. */
function productionAdvice(config: Config, production: boolean): CheckResult[] {
  const results: CheckResult[] = [];
  let dialect: string;
  try {
    dialect = parseDatabaseUrl(config.DATABASE_URL).dialect;
  } catch {
    dialect = 'unknown';
  }
  if (production && dialect === 'sqlite') {
    results.push(
      result(
        'database engine',
        'WARN',
        'SQLite in production: every worker and HTTP process must run on this one machine',
        'use PostgreSQL (DATABASE_URL=postgres://…) to run on more than one machine',
      ),
    );
  } else {
    results.push(result('database engine', 'OK', dialect));
  }
  if (production && !config.ALERT_WEBHOOK_URL) {
    results.push(
      result(
        'alerts',
        'WARN',
        'no ALERT_WEBHOOK_URL: failed workflows and idle task queues are only logged',
        'set ALERT_WEBHOOK_URL (a Slack-compatible incoming webhook)',
      ),
    );
  } else if (production && config.TASK_QUEUE_NO_POLLER_ALERT_SECONDS === 0) {
    results.push(
      result(
        'alerts',
        'WARN',
        'TASK_QUEUE_NO_POLLER_ALERT_SECONDS=0: nobody is told when the workers stop',
        'set it (default 120) on at least one HTTP process',
      ),
    );
  } else {
    const sink = config.ALERT_WEBHOOK_URL ? new URL(config.ALERT_WEBHOOK_URL).host : 'log only';
    const watchdog =
      config.TASK_QUEUE_NO_POLLER_ALERT_SECONDS === 0
        ? 'no-poller watchdog off'
        : `no-poller alert after ${config.TASK_QUEUE_NO_POLLER_ALERT_SECONDS} s`;
    results.push(result('alerts', 'OK', `${sink}; ${watchdog}`));
  }
  if (config.PAYLOAD_ENCRYPTION_KEY) {
    const refused = codecEndpointRefusal(config);
    results.push(
      refused
        ? result(
            'codec endpoint',
            'WARN',
            `not served: ${refused}`,
            'set CODEC_AUTH_TOKEN to read payloads in the Web UI and CLI (docs/payload-encryption.md)',
          )
        : result(
            'codec endpoint',
            'OK',
            config.CODEC_AUTH_TOKEN ? 'served, bearer token required' : 'served on loopback only',
          ),
    );
  }
  return results;
}

/** Days left before the client certificate expires; soon enough, every connection will be refused. */
const CERTIFICATE_WARN_DAYS = 14;

function certificateAdvice(certificate: { subject: string; notAfter: Date; from: string }) {
  const days = Math.floor((certificate.notAfter.getTime() - Date.now()) / 86_400_000);
  const detail = `${certificate.subject}, expires ${certificate.notAfter.toISOString().slice(0, 10)} (in ${days} d)`;
  return days < CERTIFICATE_WARN_DAYS
    ? result(
        'client certificate',
        'WARN',
        detail,
        `renew it (${certificate.from}) and restart the processes: they read it at start-up`,
      )
    : result('client certificate', 'OK', detail);
}
