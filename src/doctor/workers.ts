import { Client, type Connection } from '@temporalio/client';
import {
  describeBacklog,
  describePollers,
  isLive,
  pollersOfBuild,
  type PollerSighting,
  type TaskQueuePollers,
} from '../monitoring/task-queue-pollers';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../shared/constants';
import { describeDeployment } from '../temporal/deployments';
import type { TemporalCheckOptions } from './temporal';
import { type CheckResult, result } from './types';

/** One call under a gRPC deadline: a hung server makes the check UNKNOWN instead of hanging the doctor. */
export function within<T>(
  connection: Connection,
  timeoutMs: number,
  call: () => Promise<T>,
): Promise<T> {
  return connection.withDeadline(Date.now() + timeoutMs, call);
}

/** The builds that get work: the current one and the ramping one; undefined: any poller serves. */
export type RoutedBuilds = Array<{ role: 'current' | 'ramping'; buildId: string }> | undefined;

/** How to start a worker for each queue, for the hint of an unpolled one. */
const WORKER_COMMANDS: Record<string, string> = {
  [PAYMENTS_TASK_QUEUE]: 'npm run worker',
  [HEAVY_TASK_QUEUE]: 'npm run heavy-worker',
};

/** No current build is a FAIL: new runs wait on the unversioned queue, where none polls. */
export async function checkDeployment(
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

export async function checkPollers(
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

export async function checkBacklog(
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
