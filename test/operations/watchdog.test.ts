import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createTaskQueueWatchdog } from '../../src/monitoring';
import { describePollers, type TaskQueueConnection } from '../../src/monitoring/task-queue-pollers';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { type AlertSink, eventually, startAlertSink } from './helpers';

// The no-poller watchdog of the HTTP process: when no worker has polled a task queue for longer
// than the threshold, one structured error and one alert to the sink per outage; a recovery line
// when a worker polls again.

type LogCall = { level: 'error' | 'warn' | 'info'; fields: Record<string, unknown>; msg: string };

function recordingLogger() {
  const calls: LogCall[] = [];
  const record =
    (level: LogCall['level']) => (fields: Record<string, unknown> | string, msg?: string) => {
      calls.push(
        typeof fields === 'string'
          ? { level, fields: {}, msg: fields }
          : { level, fields, msg: msg ?? '' },
      );
    };
  return {
    calls,
    logger: { error: record('error'), warn: record('warn'), info: record('info') } as never,
  };
}

/** A Temporal stand-in whose one queue was last polled at `lastPoll` (undefined: no poller listed). */
function fakeTemporal() {
  const state: { lastPoll: number | undefined; down: boolean } = {
    lastPoll: undefined,
    down: false,
  };
  const connection: TaskQueueConnection = {
    withDeadline: (_deadline, call) => call(),
    workflowService: {
      describeTaskQueue: (request) => {
        if (state.down) return Promise.reject(new Error('14 UNAVAILABLE: connection refused'));
        const pollers =
          state.lastPoll === undefined ||
          request.taskQueueType !== temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
            ? []
            : [
                {
                  identity: '4242@worker-1',
                  lastAccessTime: { seconds: Math.floor(state.lastPoll / 1000), nanos: 0 },
                },
              ];
        return Promise.resolve({ pollers } as never);
      },
    },
  };
  return { state, connection };
}

describe('task queue watchdog (fake clock)', () => {
  let sink: AlertSink;
  beforeEach(async () => {
    sink = await startAlertSink();
  });
  afterEach(async () => {
    await sink.close();
  });

  const THRESHOLD_MS = 120_000;
  const start = Date.parse('2025-03-01T09:00:00Z');

  function setup() {
    let now = start;
    const temporal = fakeTemporal();
    const log = recordingLogger();
    const watchdog = createTaskQueueWatchdog({
      connection: temporal.connection,
      namespace: 'default',
      taskQueues: ['payments'],
      noPollerAlertMs: THRESHOLD_MS,
      checkIntervalMs: 30_000,
      logger: log.logger,
      alertWebhookUrl: sink.url,
      temporalUiUrl: 'http://localhost:8233',
      now: () => now,
    });
    return {
      temporal,
      log,
      watchdog,
      at: (secondsFromStart: number) => {
        now = start + secondsFromStart * 1000;
      },
    };
  }

  const alertsOf = (kind: string) => sink.received.filter((r) => r.body.alert.kind === kind);

  it('alerts once when the queue loses its worker, never repeats it, and logs the recovery', async () => {
    const { temporal, log, watchdog, at } = setup();
    temporal.state.lastPoll = start - 10_000;
    await watchdog.check();

    // The worker dies after that poll; nothing happens until the threshold has passed.
    at(100);
    await watchdog.check();
    expect(sink.received).toHaveLength(0);
    at(115); // 125 s since the last poll
    await watchdog.check();
    expect(alertsOf('task_queue_no_poller')).toHaveLength(1);
    const [alert] = alertsOf('task_queue_no_poller');
    expect(alert!.body.text).toContain('no worker is polling task queue payments');
    expect(alert!.body.text).toContain(
      '<http://localhost:8233/namespaces/default/task-queues/payments|Open the task queue in Temporal Web UI>',
    );
    expect(alert!.body.alert).toMatchObject({
      namespace: 'default',
      task_queue: 'payments',
      last_poll_at: new Date(start - 10_000).toISOString(),
      silent_seconds: 125,
      threshold_seconds: 120,
    });
    expect(alert!.headers['idempotency-key']).toBe(
      `task-queue-no-poller-default-payments-${new Date(start - 10_000).toISOString()}`,
    );
    const errors = log.calls.filter((c) => c.level === 'error');
    expect(errors).toEqual([
      expect.objectContaining({
        fields: expect.objectContaining({
          alert: 'task_queue_no_poller',
          taskQueue: 'payments',
          silentSeconds: 125,
        }),
      }),
    ]);

    // Still down, later; then the server forgets the dead poller altogether: no second alert.
    for (const seconds of [145, 600, 1200]) {
      at(seconds);
      await watchdog.check();
    }
    temporal.state.lastPoll = undefined;
    at(1500);
    await watchdog.check();
    expect(alertsOf('task_queue_no_poller')).toHaveLength(1);
    expect(log.calls.filter((c) => c.level === 'error')).toHaveLength(1);

    // A worker polls again: one recovery line, and the sink hears the outage is over.
    temporal.state.lastPoll = start + 1_790_000;
    at(1800);
    await watchdog.check();
    await watchdog.check();
    const recoveries = log.calls.filter((c) => c.fields.alert === 'task_queue_poller_recovered');
    expect(recoveries).toHaveLength(1);
    expect(recoveries[0]!.level).toBe('info');
    expect(recoveries[0]!.fields).toMatchObject({ taskQueue: 'payments', downSeconds: 1800 });
    expect(alertsOf('task_queue_poller_recovered')).toHaveLength(1);

    // The next outage is a new one: it alerts again, once.
    at(2000);
    await watchdog.check();
    await watchdog.check();
    expect(alertsOf('task_queue_no_poller')).toHaveLength(2);
  });

  it('alerts on a queue nobody has polled since the watchdog started', async () => {
    const { log, watchdog, at } = setup();
    await watchdog.check();
    at(119);
    await watchdog.check();
    expect(sink.received).toHaveLength(0);
    at(121);
    await watchdog.check();
    expect(alertsOf('task_queue_no_poller')).toHaveLength(1);
    expect(alertsOf('task_queue_no_poller')[0]!.body.alert.last_poll_at).toBeNull();
    expect(log.calls.filter((c) => c.level === 'error')).toHaveLength(1);
  });

  it('delivers the alert at a later check when the sink fails, still only once', async () => {
    const { temporal, log, watchdog, at } = setup();
    temporal.state.lastPoll = start;
    sink.status = 503;
    at(200);
    await watchdog.check();
    expect(sink.received).toHaveLength(0);
    expect(log.calls.filter((c) => c.level === 'warn')).toHaveLength(1);
    sink.status = 200;
    at(230);
    await watchdog.check();
    at(260);
    await watchdog.check();
    expect(alertsOf('task_queue_no_poller')).toHaveLength(1);
    expect(log.calls.filter((c) => c.level === 'error')).toHaveLength(1);
  });

  it('does not mistake Temporal being unreachable for a lost worker', async () => {
    const { temporal, log, watchdog, at } = setup();
    temporal.state.lastPoll = start;
    temporal.state.down = true;
    for (const seconds of [0, 200, 400]) {
      at(seconds);
      await watchdog.check();
    }
    expect(sink.received).toHaveLength(0);
    expect(log.calls.filter((c) => c.level === 'warn')).toHaveLength(1);
    expect(log.calls.filter((c) => c.level === 'error')).toHaveLength(0);
  });
});

describe('task queue watchdog against a dev server (short threshold)', () => {
  let env: TestWorkflowEnvironment;
  let sink: AlertSink;
  beforeAll(async () => {
    env = await createDevServerEnv();
    sink = await startAlertSink();
  });
  afterAll(async () => {
    await sink?.close();
    await env?.teardown();
  });

  async function startWorker(taskQueue: string) {
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowsPath: require.resolve('../../src/workflows'),
      activities: { noop: () => Promise.resolve() },
    });
    const running = worker.run();
    return async () => {
      worker.shutdown();
      await running;
    };
  }

  it("reads each worker's last poll from Temporal, alerts when it stops, and logs its return", async () => {
    const taskQueue = `watchdog-${Date.now()}`;
    const log = recordingLogger();
    const watchdog = createTaskQueueWatchdog({
      connection: env.client.connection,
      namespace: env.namespace ?? 'default',
      taskQueues: [taskQueue],
      // Far below what production allows (an idle worker renews its poll once a minute), so the
      // test runs in seconds: each check below comes right after a worker started polling.
      noPollerAlertMs: 5_000,
      checkIntervalMs: 60_000,
      logger: log.logger,
      alertWebhookUrl: sink.url,
    });

    let stopWorker = await startWorker(taskQueue);
    await eventually(async () => {
      const pollers = await describePollers(
        env.client.connection,
        env.namespace ?? 'default',
        taskQueue,
        5_000,
      );
      expect(pollers.workflow.length + pollers.activity.length).toBeGreaterThan(0);
    });
    await watchdog.check();
    expect(sink.received).toHaveLength(0);

    await stopWorker();
    await eventually(
      async () => {
        await watchdog.check();
        expect(sink.received).not.toHaveLength(0);
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await watchdog.check();
    expect(sink.received.map((r) => r.body.alert.kind)).toEqual(['task_queue_no_poller']);
    expect(sink.received[0]!.body.alert.task_queue).toBe(taskQueue);
    expect(sink.received[0]!.body.alert.last_poll_at).not.toBeNull();

    stopWorker = await startWorker(taskQueue);
    try {
      await eventually(async () => {
        await watchdog.check();
        expect(
          log.calls.filter((c) => c.fields.alert === 'task_queue_poller_recovered'),
        ).toHaveLength(1);
      });
      expect(sink.received.map((r) => r.body.alert.kind)).toEqual([
        'task_queue_no_poller',
        'task_queue_poller_recovered',
      ]);
    } finally {
      await watchdog.stop();
      await stopWorker();
    }
  });
});
