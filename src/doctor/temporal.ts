import { Client, type Connection } from '@temporalio/client';
import { errorMessage } from '../monitoring/probes';
import {
  describeBacklog,
  describePollers,
  isLive,
  pollersOfBuild,
  type PollerSighting,
  type TaskQueuePollers,
} from '../monitoring/task-queue-pollers';
import { describeDeployment } from '../temporal/deployments';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../shared/constants';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../shared/search-attributes';
import type { TemporalConnectionSettings } from '../temporal/connection';
import {
  connectOrDiagnose,
  diagnoseConnectionFailure,
  TemporalConnectionError,
} from '../temporal/connection-diagnosis';
import { compareSearchAttributes, registerCommands } from '../temporal/setup';
import { type CheckResult, result } from './types';

export interface TemporalCheckOptions {
  address: string;
  /** TLS, API key, gRPC headers and a safe summary (config.temporalConnection); none: plain text. */
  settings?: Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'metadata' | 'summary'>;
  namespace: string;
  taskQueues: readonly string[];
  /** WARN when more tasks than this wait on a queue. */
  backlogWarnAt: number;
  timeoutMs: number;
  /** True when the address is the embedded dev server's default (the hint differs). */
  devDefault: boolean;
  /** WORKER_DEPLOYMENT_NAME when workers are versioned: only its routed builds' pollers count. */
  deploymentName?: string;
  /** A poll older than this no longer counts (default POLLER_FRESH_MS). */
  pollerFreshMs?: number;
  now?: () => number;
}

/** The builds that get work: the current one and the ramping one; undefined: any poller serves. */
type RoutedBuilds = Array<{ role: 'current' | 'ramping'; buildId: string }> | undefined;

/** How to start a worker for each queue, for the hint of an unpolled one. */
const WORKER_COMMANDS: Record<string, string> = {
  [PAYMENTS_TASK_QUEUE]: 'npm run worker',
  [HEAVY_TASK_QUEUE]: 'npm run heavy-worker',
};

/**
 * Temporal as this system needs it: the server answers, the namespace exists, the custom search
 * attributes the workflows set are registered, and every task queue has a live worker and no
 * pile of waiting tasks.
 */
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
  let connection: Connection;
  let version: string | undefined;
  try {
    connection = await connectOrDiagnose(options.settings, {
      address,
      timeoutMs: options.timeoutMs,
    });
  } catch (error) {
    if (!(error instanceof TemporalConnectionError)) throw error;
    return [...how, unreachable(options, error.diagnosis), ...rest('Temporal not reachable')];
  }
  try {
    try {
      const info = await within(connection, options.timeoutMs, () =>
        connection.workflowService.getSystemInfo({}),
      );
      version = info.serverVersion ?? undefined;
    } catch (error) {
      const diagnosis = await diagnoseConnectionFailure(error, {
        address,
        settings: options.settings,
        timeoutMs: options.timeoutMs,
      });
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

/** One call under a gRPC deadline: a hung server fails the check instead of hanging the doctor. */
function within<T>(connection: Connection, timeoutMs: number, call: () => Promise<T>): Promise<T> {
  return connection.withDeadline(Date.now() + timeoutMs, call);
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

function unreachable(
  options: TemporalCheckOptions,
  diagnosis: { problem: string; hint: string },
): CheckResult {
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
    const ttl = described.config?.workflowExecutionRetentionTtl;
    const days = ttl?.seconds ? Number(ttl.seconds.toString()) / 86_400 : undefined;
    return result(
      'namespace',
      'OK',
      `${namespace}${days === undefined ? '' : ` (retention ${+days.toFixed(1)} d)`}`,
    );
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

/**
 * The deployment's routing: which builds new runs go to. No current build is a FAIL: new runs
 * wait on the unversioned queue, where no versioned worker polls. A deployment the server does
 * not know yet (no versioned worker has ever polled) leaves the queues judged by any poller.
 */
async function checkDeployment(
  connection: Connection,
  deploymentName: string,
  options: TemporalCheckOptions,
): Promise<{ result: CheckResult; routed: RoutedBuilds }> {
  const client = new Client({ connection, namespace: options.namespace });
  const state = await within(connection, options.timeoutMs, () =>
    describeDeployment(client, deploymentName),
  );
  if (!state) {
    return {
      result: result(
        'deployment',
        'SKIP',
        `${deploymentName}: no versioned worker has polled yet; any worker's polls count below`,
      ),
      routed: undefined,
    };
  }
  const routed: NonNullable<RoutedBuilds> = [];
  if (state.current) routed.push({ role: 'current', buildId: state.current });
  if (state.ramping) routed.push({ role: 'ramping', buildId: state.ramping.buildId });
  const ramp = state.ramping
    ? `, ramping ${state.ramping.buildId} (${state.ramping.percentage} %)`
    : '';
  if (!state.current) {
    return {
      result: result(
        'deployment',
        'FAIL',
        `${deploymentName}: no current build${ramp}: new runs wait for one`,
        'make a build with live workers current: npm run ops -- deployment current <build-id>',
      ),
      routed,
    };
  }
  return {
    result: result('deployment', 'OK', `${deploymentName}: current ${state.current}${ramp}`),
    routed,
  };
}

async function checkPollers(
  connection: Connection,
  taskQueue: string,
  options: TemporalCheckOptions,
  routed: RoutedBuilds,
): Promise<CheckResult> {
  const now = (options.now ?? Date.now)();
  const pollers = await describePollers(
    connection,
    options.namespace,
    taskQueue,
    options.timeoutMs,
  );
  const name = `workers: ${taskQueue}`;
  if (!routed) return judgePollers(name, taskQueue, pollers, now, options);
  // Each build that gets new runs needs its own workers: another build's pollers never take
  // its tasks. The worst verdict wins; every build's line is shown.
  const verdicts = routed.map(({ role, buildId }) => {
    const mine = pollersOfBuild(pollers, { deploymentName: options.deploymentName!, buildId });
    const verdict = judgePollers(name, taskQueue, mine, now, options);
    return { ...verdict, detail: `${role} ${buildId}: ${verdict.detail}` };
  });
  const order = ['FAIL', 'WARN', 'OK'];
  const worst = verdicts.reduce((a, b) =>
    order.indexOf(b.status) < order.indexOf(a.status) ? b : a,
  );
  const others = [...pollers.workflow, ...pollers.activity].filter(
    (p) =>
      isLive(p, now, options.pollerFreshMs) && !routed.some((r) => r.buildId === p.build?.buildId),
  );
  const otherText =
    worst.status !== 'OK' && others.length > 0
      ? `; ${new Set(others.map((p) => p.identity)).size} worker(s) of other builds poll it, which take none of these runs`
      : '';
  return result(
    name,
    worst.status,
    `${verdicts.map((v) => v.detail).join('; ')}${otherText}`,
    worst.status === 'OK'
      ? '-'
      : `${worst.hint}; or make a build with live workers current (npm run ops -- deployment describe)`,
  );
}

function judgePollers(
  name: string,
  taskQueue: string,
  pollers: TaskQueuePollers,
  now: number,
  options: TemporalCheckOptions,
): CheckResult {
  const live = (list: PollerSighting[]) =>
    list.filter((p) => isLive(p, now, options.pollerFreshMs));
  const liveWorkflow = live(pollers.workflow);
  const liveActivity = live(pollers.activity);
  const start = WORKER_COMMANDS[taskQueue] ?? 'start its worker';

  if (liveWorkflow.length === 0 && liveActivity.length === 0) {
    const all = [...pollers.workflow, ...pollers.activity].sort(
      (a, b) => (b.lastPollAt?.getTime() ?? 0) - (a.lastPollAt?.getTime() ?? 0),
    );
    const last = all[0];
    const detail = last?.lastPollAt
      ? `no worker polls; last poll ${ago(now - last.lastPollAt.getTime())} by ${last.identity}`
      : 'no worker has polled it recently: its workflows and activities wait';
    return result(name, 'FAIL', detail, `start a worker for it (${start}) and check its logs`);
  }
  const identities = describeIdentities([...liveWorkflow, ...liveActivity], now);
  if (liveWorkflow.length === 0 || liveActivity.length === 0) {
    const missing = liveWorkflow.length === 0 ? 'workflow' : 'activity';
    return result(
      name,
      'WARN',
      `${identities}; nobody polls its ${missing} tasks`,
      `a worker that registers both workflows and activities for ${taskQueue} (${start})`,
    );
  }
  return result(name, 'OK', identities);
}

async function checkBacklog(
  connection: Connection,
  taskQueue: string,
  options: TemporalCheckOptions,
): Promise<CheckResult> {
  const name = `backlog: ${taskQueue}`;
  const backlog = await describeBacklog(
    connection,
    options.namespace,
    taskQueue,
    options.timeoutMs,
  );
  if (!backlog) {
    return result(
      name,
      'WARN',
      'the server does not report task queue statistics',
      'Temporal 1.25 or later reports them',
    );
  }
  const oldest = backlog.count > 0 ? ` (oldest waits ${ago(backlog.oldestMs, '')})` : '';
  const detail = `${backlog.count} task(s) waiting${oldest}`;
  if (backlog.count > options.backlogWarnAt) {
    return result(
      name,
      'WARN',
      `${detail}, more than ${options.backlogWarnAt}`,
      'workers are behind: add worker processes or slots (docs/operations.md, sizing)',
    );
  }
  return result(name, 'OK', detail);
}

function describeIdentities(sightings: PollerSighting[], now: number): string {
  const newest = new Map<string, number>();
  for (const s of sightings) {
    const at = s.lastPollAt?.getTime() ?? 0;
    newest.set(s.identity, Math.max(newest.get(s.identity) ?? 0, at));
  }
  const shown = [...newest]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([identity, at]) => `${identity} (${ago(now - at)})`);
  const more = newest.size > 3 ? `, and ${newest.size - 3} more` : '';
  return `${newest.size} polling: ${shown.join(', ')}${more}`;
}

function ago(ms: number, suffix = ' ago'): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 120) return `${seconds} s${suffix}`;
  const minutes = Math.round(seconds / 60);
  return minutes < 120 ? `${minutes} min${suffix}` : `${Math.round(minutes / 60)} h${suffix}`;
}
