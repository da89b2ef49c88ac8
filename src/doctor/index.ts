import { WATCHED_TASK_QUEUES } from '../monitoring';
import { embeddedTemporalAddress } from '../config';
import { checkConfiguration } from './configuration';
import { checkDatabase } from './database';
import { checkPartners, partnerTargets } from './partners';
import { checkTemporal } from './temporal';
import { type CheckResult, result } from './types';

export { formatReport } from './report';
export type { CheckResult, CheckStatus } from './types';

export interface DoctorOptions {
  env: NodeJS.ProcessEnv;
  backlogWarnAt?: number;
  /** Per call: a doctor that hangs on a dead server helps nobody. */
  timeoutMs?: number;
  /** Default: `payments` and `heavy`. */
  taskQueues?: readonly string[];
  pollerFreshMs?: number;
  now?: () => number;
}

export const DEFAULT_BACKLOG_WARN_AT = 100;
const DEFAULT_TIMEOUT_MS = 5_000;

export async function runDoctor(options: DoctorOptions): Promise<CheckResult[]> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const configuration = checkConfiguration(options.env);
  const results = [...configuration.results];
  const { config, temporalAddress } = configuration;
  if (!config) {
    results.push(result('database', 'SKIP', 'configuration unreadable'));
    results.push(result('temporal', 'SKIP', 'configuration unreadable'));
    return results;
  }
  results.push(...(await checkDatabase(config.DATABASE_URL, { timeoutMs })));
  results.push(...(await checkPartners(partnerTargets(config), { timeoutMs })));
  if (!temporalAddress) {
    results.push(
      result('temporal', 'SKIP', 'TEMPORAL_ADDRESS is not set: no server to check', 'set it'),
    );
    return results;
  }
  results.push(
    ...(await checkTemporal({
      address: temporalAddress,
      settings: config.temporalConnection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueues: options.taskQueues ?? WATCHED_TASK_QUEUES,
      backlogWarnAt: options.backlogWarnAt ?? DEFAULT_BACKLOG_WARN_AT,
      timeoutMs,
      devDefault: !config.TEMPORAL_ADDRESS && temporalAddress === embeddedTemporalAddress(config),
      deploymentName: config.WORKER_VERSIONING === 'on' ? config.WORKER_DEPLOYMENT_NAME : undefined,
      pollerFreshMs: options.pollerFreshMs,
      now: options.now,
    })),
  );
  return results;
}
