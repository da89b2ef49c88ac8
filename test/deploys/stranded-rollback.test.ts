import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { main as ops } from '../../src/cli/ops';
import { createAlertDeliveriesRepository } from '../../src/db';
import { workersReadiness } from '../../src/http/health';
import { createTaskQueueWatchdog, routedBuilds, WATCHED_TASK_QUEUES } from '../../src/monitoring';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { describeDeployment } from '../../src/temporal/deployments';
import { eventually } from '../support/eventually';
import { readDoctorReport, untilAnswered, untilTheDoctorCanTell } from '../support/doctor';
import type { PaymentStack } from '../support/stack';
import { type AlertSink, startAlertSink } from '../operations/helpers';
import { pauseForMaintenance } from '../operator/helpers';
import {
  bundlesOfBuildsAandB,
  startDeploymentBuilds,
  type DeploymentBuilds,
} from '../support/deployment-builds';

// The rollback of issue 26, on the dev server: build A's workers are stopped after B became
// current, then an operator makes A current again. Without --force the command refuses, naming
// what is missing; forced, new payments are accepted and wait, and every signal says so: the
// doctor fails on the current build's queues, the watchdog alerts once (and a restarted
// watchdog does not post it again), describe marks A's missing workers, and drain names B's
// order whose warehouse call an operator paused.

// The server holds an idle poll 2 s instead of 60 s, so a live worker's last poll is never older
// than that and one stopped for 8 s is told apart in seconds, as production tells 2 minutes.
const LONG_POLL_SECONDS = 2;
const FRESH_MS = 8_000;
let env: TestWorkflowEnvironment;
let stack: PaymentStack;
let sink: AlertSink;
let builds: DeploymentBuilds;

const cliEnv = () => ({
  TEMPORAL_ADDRESS: env.address,
  TEMPORAL_NAMESPACE: env.namespace ?? 'default',
  DATABASE_URL: stack.db.url,
  WAREHOUSE_API_URL: stack.warehouseUrl,
  SMTP_URL: stack.smtp.url,
});

async function operator(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await ops(['deployment', ...argv], {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: cliEnv(),
    pollerFreshMs: FRESH_MS,
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/**
 * The doctor's report once it can tell. Under load a call of it can run out of its 5 s: that
 * check is then UNKNOWN ("could not tell", exit 4), which is no answer to assert on, so the
 * doctor is asked again; any other answer is the one the assertions judge (issue 37).
 */
function doctor() {
  return untilTheDoctorCanTell(async () => {
    const out: string[] = [];
    const code = await ops(['doctor'], {
      out: (text) => out.push(text),
      err: (text) => out.push(text),
      env: { NODE_ENV: 'development', ...cliEnv() },
      pollerFreshMs: FRESH_MS,
    });
    return readDoctorReport(code, out.join('\n'));
  });
}

function watchdog(logs: string[]) {
  const record = (fields: object | string, msg?: string) =>
    logs.push(typeof fields === 'string' ? fields : `${msg ?? ''} ${JSON.stringify(fields)}`);
  return createTaskQueueWatchdog({
    connection: env.client.connection,
    namespace: env.namespace ?? 'default',
    taskQueues: WATCHED_TASK_QUEUES,
    noPollerAlertMs: FRESH_MS,
    checkIntervalMs: 60_000,
    logger: { error: record, warn: record, info: record } as never,
    alertWebhookUrl: sink.url,
    routedBuilds: () => routedBuilds(env.client, builds.deploymentName),
    deliveries: createAlertDeliveriesRepository(stack.db.db),
  });
}

beforeAll(async () => {
  builds = await startDeploymentBuilds({ longPollSeconds: LONG_POLL_SECONDS });
  ({ env, stack } = builds);
  sink = await startAlertSink();
}, 120_000);

afterAll(async () => {
  await builds?.close();
  await sink?.close();
});

describe('a rollback to a build whose workers were stopped', () => {
  it('is refused without --force; forced, the doctor fails, the watchdog alerts once, drain names the paused run', async () => {
    const [bundleA, bundleB] = await bundlesOfBuildsAandB();
    const a = await builds.start(bundleA);
    expect(await operator('current', a.buildId)).toMatchObject({ code: 0 });
    const b = await builds.start(bundleB);
    expect(await operator('current', b.buildId)).toMatchObject({ code: 0 });

    // An order on B waits out the warehouse, and an operator pauses its warehouse call.
    stack.warehouse.setMode({ kind: 'unavailable', status: 503 });
    const parked = await builds.pay('evt_parked_on_b');
    const parkedOrder = env.client.workflow.getHandle(orderWorkflowId(parked.orderId));
    const activityId = await eventually(async () => {
      const pending = (await parkedOrder.describe()).raw.pendingActivities?.[0];
      expect(pending?.attempt).toBeGreaterThanOrEqual(2);
      return pending!.activityId!;
    });
    await pauseForMaintenance(env, parkedOrder.workflowId, activityId);

    // A's workers stop (its runs were done); the doctor is content with B's workers, and names
    // the warehouse outage.
    await builds.stop(a.buildId);
    const before = await doctor();
    expect(before.line('workers: payments')).toMatch(/ OK /);
    expect(before.line('workers: heavy')).toMatch(/ OK /);
    expect(before.line('warehouse')).toMatch(/ FAIL .*answered 503/);
    expect(before.code).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, FRESH_MS + 1_000));

    // The rollback, refused: nothing changes on the server.
    const refused = await operator('current', a.buildId);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`no live worker of ${a.buildId} polls`);
    for (const queue of WATCHED_TASK_QUEUES) {
      expect(refused.err).toContain(`${queue} (workflow and activity tasks)`);
    }
    expect((await operator('ramp', a.buildId, '10')).code).toBe(1);
    expect(await describeDeployment(env.client, builds.deploymentName)).toMatchObject({
      current: b.buildId,
      ramping: undefined,
    });

    // Forced: done, said so, and recorded as the deployment's last modifier.
    const forced = await operator('current', '--force', a.buildId);
    expect(forced.code).toBe(0);
    expect(forced.err).toContain(`WARNING: current ${a.buildId} forced`);
    const info = await env.client.workflowService.describeWorkerDeployment({
      namespace: env.namespace ?? 'default',
      deploymentName: builds.deploymentName,
    });
    expect(info.workerDeploymentInfo?.lastModifierIdentity).toContain('--force');

    // A new payment is accepted and waits: no worker of A takes it, B's polls do not help.
    const stranded = await builds.pay('evt_stranded_on_a');
    const strandedPayment = env.client.workflow.getHandle(paymentWorkflowId(stranded.eventId));
    expect((await strandedPayment.describe()).status.name).toBe('RUNNING');

    const report = await doctor();
    expect(report.code).toBe(1);
    for (const queue of WATCHED_TASK_QUEUES) {
      expect(report.line(`workers: ${queue}`)).toMatch(/ FAIL /);
      expect(report.text).toMatch(
        new RegExp(
          `^  workers: ${queue} \\(FAIL\\): current ${a.buildId}: no worker polls.*1 worker\\(s\\) of other builds poll it`,
          'm',
        ),
      );
    }
    expect(report.line('deployment')).toContain(`current ${a.buildId}`);
    // /readyz names it too (advisory: the webhook still takes and queues payments).
    const readiness = workersReadiness(
      env.client,
      { deploymentName: builds.deploymentName, versioned: true },
      WATCHED_TASK_QUEUES,
      FRESH_MS,
    );
    await expect(untilAnswered(() => readiness.check(Date.now() + 5_000))).rejects.toThrow(
      `no live worker of build ${a.buildId} polls payments`,
    );

    const described = await operator('describe');
    expect(described.out).toMatch(new RegExp(`${a.buildId} .*MISSING payments`));
    expect(described.out).toMatch(new RegExp(`${b.buildId} .*payments 1/1, heavy 1/1\\s*$`, 'm'));

    // Drain of B: its parked order holds it, its warehouse call paused.
    const drain = await operator('drain', b.buildId);
    expect(drain.code).toBe(1);
    expect(drain.out).toContain(`${parkedOrder.workflowId} (orderWorkflow`);
    expect(drain.out).toMatch(/PAUSED: notifyWarehouse/);

    // The watchdog alerts at its first check, once per queue, naming the build.
    const logs: string[] = [];
    const first = watchdog(logs);
    await first.check();
    await first.check();
    const alerts = () => sink.received.filter((r) => r.body.alert.kind === 'task_queue_no_poller');
    expect(alerts().map((r) => [r.body.alert.task_queue, r.body.alert.build_id])).toEqual(
      WATCHED_TASK_QUEUES.map((queue) => [queue, a.buildId]),
    );
    expect(alerts()[0]!.body.text).toContain(`no worker of the current build ${a.buildId}`);
    await first.stop();

    // The HTTP process restarts: the same outage is not posted again.
    const restarted = watchdog(logs);
    await restarted.check();
    expect(alerts()).toHaveLength(WATCHED_TASK_QUEUES.length);

    // A's workers come back: the stranded payment goes through, and the sink hears of it.
    await builds.start(bundleA);
    await strandedPayment.result();
    await eventually(async () => {
      await restarted.check();
      expect(logs.filter((l) => l.includes('is polled again by build'))).toHaveLength(
        WATCHED_TASK_QUEUES.length,
      );
    });
    await restarted.stop();
    stack.warehouse.setMode({ kind: 'ok' });
    expect((await doctor()).code).toBe(0);
  }, 240_000);
});
