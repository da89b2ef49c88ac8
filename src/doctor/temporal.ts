import type { Connection } from '@temporalio/client';
import { errorMessage } from '../monitoring/probes';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../shared/search-attributes';
import type { TemporalConnectionSettings } from '../temporal/connection';
import { compareSearchAttributes, describeRetention, registerCommands } from '../temporal/setup';
import { connectOrExplain, type Diagnosis, explainCallFailure } from './connection';
import { type CheckResult, result } from './types';
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
    return [...how, unreachable(options, opened.diagnosis), ...rest('Temporal not reachable')];
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
      return [...how, unreachable(options, diagnosis), ...rest('Temporal not reachable')];
    }
    const results = [
      ...how,
      result('temporal', 'OK', `server ${version ?? '(version unknown)'} at ${address}`),
    ];

    const ns = await checkNamespace(connection, namespace, options.timeoutMs);
    results.push(ns);
    if (ns.status === 'FAIL') return [...results, ...rest('no namespace').slice(1)];

    results.push(
      await guarded('search attributes', () =>
        checkSearchAttributes(connection, namespace, options.timeoutMs),
      ),
    );
    let routed: RoutedBuilds;
    if (options.deploymentName) {
      const deployment = await checkDeployment(connection, options.deploymentName, options);
      results.push(deployment.result);
      routed = deployment.routed;
    }
    for (const taskQueue of options.taskQueues) {
      results.push(
        await guarded(`workers: ${taskQueue}`, () =>
          checkPollers(connection, taskQueue, options, routed),
        ),
      );
      results.push(
        await guarded(`backlog: ${taskQueue}`, () => checkBacklog(connection, taskQueue, options)),
      );
    }
    return results;
  } finally {
    await connection.close();
  }
}

/** A check whose call failed (timeout, permission) is a FAIL row, not the end of the report. */
async function guarded(check: string, run: () => Promise<CheckResult>): Promise<CheckResult> {
  try {
    return await run();
  } catch (error) {
    return result(
      check,
      'FAIL',
      `could not check: ${errorMessage(error)}`,
      'run the doctor again; if it persists, check Temporal',
    );
  }
}

function unreachable(options: TemporalCheckOptions, diagnosis: Diagnosis): CheckResult {
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
