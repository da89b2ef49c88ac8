import type { Connection } from '@temporalio/client';
import { errorMessage } from '../monitoring/probes';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../shared/search-attributes';
import type { TemporalConnectionSettings } from '../temporal/connection';
import { compareSearchAttributes, describeRetention, registerCommands } from '../temporal/setup';
import { connectOrExplain, type Diagnosis, explainCallFailure } from './connection';
import {
  againHint,
  type CheckResult,
  type CheckStatus,
  couldNotTell,
  result,
  timedOut,
} from './types';
import { checkBacklog, checkDeployment, checkPollers, type RoutedBuilds, within } from './workers';

export interface TemporalCheckOptions {
  address: string;
  /** TLS, API key, gRPC headers and a safe summary (config.temporalConnection); none: plain text. */
  settings?: Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'security' | 'summary'>;
  namespace: string;
  taskQueues: readonly string[];
  backlogWarnAt: number;
  timeoutMs: number;
  /** True when the address is the embedded dev server's default (the hint differs). */
  devDefault: boolean;
  /** WORKER_DEPLOYMENT_NAME when workers are versioned: only its routed builds' pollers count. */
  deploymentName?: string;
  pollerFreshMs?: number;
  now?: () => number;
}

export async function checkTemporal(options: TemporalCheckOptions): Promise<CheckResult[]> {
  const { address, namespace } = options;
  const rest = (reason: string) => [
    result('namespace', 'SKIP', reason),
    result('search attributes', 'SKIP', reason),
    ...options.taskQueues.flatMap((q) => [
      result(`workers: ${q}`, 'SKIP', reason),
      result(`backlog: ${q}`, 'SKIP', reason),
    ]),
  ];

  // How it connects (TLS, certificate, API key, profile), never a secret: a row of its own so
  // the problem in the next row is not cut short by it.
  const how = options.settings ? [result('connection', 'OK', options.settings.summary)] : [];
  const opened = await connectOrExplain(options.settings, {
    address,
    timeoutMs: options.timeoutMs,
  });
  if ('diagnosis' in opened) {
    return [...how, unreachable(options, opened.diagnosis), ...rest(notChecked(opened.diagnosis))];
  }
  const { connection } = opened;
  let version: string | undefined;
  try {
    try {
      const info = await within(connection, options.timeoutMs, () =>
        connection.workflowService.getSystemInfo({}),
      );
      version = info.serverVersion ?? undefined;
    } catch (error) {
      const diagnosis = explainCallFailure(error, options.settings, options.timeoutMs);
      return [...how, unreachable(options, diagnosis), ...rest(notChecked(diagnosis))];
    }
    const results = [
      ...how,
      result('temporal', 'OK', `server ${version ?? '(version unknown)'} at ${address}`),
    ];

    const ns = await checkNamespace(connection, namespace, options.timeoutMs);
    results.push(ns);
    if (ns.status === 'FAIL') return [...results, ...rest('no namespace').slice(1)];

    results.push(
      await guarded('search attributes', options.timeoutMs, () =>
        checkSearchAttributes(connection, namespace, options.timeoutMs),
      ),
    );
    let routed: RoutedBuilds;
    // Unread, nobody knows which build's workers count: another build's polls must not pass.
    let unreadRouting: CheckStatus | undefined;
    if (options.deploymentName) {
      let deployment: CheckResult;
      try {
        const read = await checkDeployment(connection, options.deploymentName, options);
        deployment = read.result;
        routed = read.routed;
      } catch (error) {
        deployment = failedCall('deployment', error, options.timeoutMs);
        unreadRouting = deployment.status;
      }
      results.push(deployment);
    }
    for (const taskQueue of options.taskQueues) {
      const workers = `workers: ${taskQueue}`;
      results.push(
        unreadRouting === 'UNKNOWN'
          ? result(
              workers,
              'UNKNOWN',
              'could not tell: the deployment did not say which builds get new runs, so whose polls count is unknown',
              againHint('Temporal', CHECK_TEMPORAL),
            )
          : unreadRouting
            ? result(workers, 'SKIP', 'the deployment could not be read')
            : await guarded(workers, options.timeoutMs, () =>
                checkPollers(connection, taskQueue, options, routed),
              ),
      );
      results.push(
        await guarded(`backlog: ${taskQueue}`, options.timeoutMs, () =>
          checkBacklog(connection, taskQueue, options),
        ),
      );
    }
    return results;
  } finally {
    await connection.close();
  }
}

/**
 * A check whose call failed is a row, not the end of the report: UNKNOWN when the call got no
 * answer in time (it saw nothing), FAIL when Temporal answered with an error (permission…).
 */
async function guarded(
  check: string,
  timeoutMs: number,
  run: () => Promise<CheckResult>,
): Promise<CheckResult> {
  try {
    return await run();
  } catch (error) {
    return failedCall(check, error, timeoutMs);
  }
}

function failedCall(check: string, error: unknown, timeoutMs: number): CheckResult {
  return timedOut(error)
    ? couldNotTell(check, 'Temporal', timeoutMs, CHECK_TEMPORAL)
    : result(
        check,
        'FAIL',
        `could not check: ${errorMessage(error)}`,
        'run the doctor again; if it persists, check Temporal',
      );
}

const CHECK_TEMPORAL = 'check its load and health';

function notChecked(diagnosis: Diagnosis): string {
  return diagnosis.timedOut ? 'Temporal did not answer in time' : 'Temporal not reachable';
}

function unreachable(options: TemporalCheckOptions, diagnosis: Diagnosis): CheckResult {
  if (diagnosis.timedOut) {
    return result(
      'temporal',
      'UNKNOWN',
      `could not tell: ${diagnosis.problem}`,
      `run the doctor again; if it keeps not answering: ${diagnosis.hint}`,
    );
  }
  const refused = /^unreachable: nothing listens/.test(diagnosis.problem);
  return result(
    'temporal',
    'FAIL',
    diagnosis.problem,
    options.devDefault && refused
      ? 'start the dev stack (npm start), or set TEMPORAL_ADDRESS'
      : diagnosis.hint,
  );
}

async function checkNamespace(
  connection: Connection,
  namespace: string,
  timeoutMs: number,
): Promise<CheckResult> {
  try {
    const described = await within(connection, timeoutMs, () =>
      connection.workflowService.describeNamespace({ namespace }),
    );
    return result('namespace', 'OK', describeRetention(namespace, described));
  } catch (error) {
    // No answer in time says nothing of whether it exists: the checks after it still run.
    if (timedOut(error)) {
      return couldNotTell('namespace', 'Temporal', timeoutMs, CHECK_TEMPORAL);
    }
    const command = `temporal operator namespace create --namespace ${namespace}`;
    return result(
      'namespace',
      'FAIL',
      `${namespace}: ${errorMessage(error)}`,
      'create it, or set TEMPORAL_NAMESPACE to an existing one',
      [command],
    );
  }
}

async function checkSearchAttributes(
  connection: Connection,
  namespace: string,
  timeoutMs: number,
): Promise<CheckResult> {
  const response = await within(connection, timeoutMs, () =>
    connection.operatorService.listSearchAttributes({ namespace }),
  );
  const { missing, wrongType } = compareSearchAttributes(response.customAttributes ?? {});
  const names = CUSTOM_SEARCH_ATTRIBUTES.map((k) => `${k.name} (${k.type})`).join(', ');
  if (missing.length === 0 && wrongType.length === 0) {
    return result('search attributes', 'OK', `registered: ${names}`);
  }
  const commands = registerCommands(namespace, missing);
  const problems = [
    ...(missing.length > 0 ? [`not registered: ${missing.join(', ')}`] : []),
    ...wrongType,
  ];
  return result(
    'search attributes',
    'FAIL',
    `${problems.join('; ')}: workflows that set them fail their workflow tasks`,
    wrongType.length > 0
      ? 'a name registered with another type must be renamed or removed by the cluster admin'
      : 'register them (commands below)',
    commands,
  );
}
