import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ActivityOptions } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import type { State } from '@temporalio/worker';
import { ConfigError, loadConfig } from '../../src/config';
import { startWorkerHealthServer } from '../../src/monitoring';
import { HEAVY_TASK_QUEUE } from '../../src/shared/constants';
import { RetryPolicies } from '../../src/shared/retry-policies';
import {
  LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS,
  PAYMENTS_WORKER_SHUTDOWN_FORCE_MS,
  PAYMENTS_WORKER_SHUTDOWN_GRACE_MS,
} from '../../src/workers/payments';
import { AGGREGATE_STOCK_ACTIVITY_OPTIONS } from '../../src/workflows/stock';

// The activity options of the `payments` worker: every preset of the order-payment flow (its
// workflows proxy their activities with these and nothing else), plus the stock aggregation's
// while it runs on that queue. The heavy queue's (batch, invoice) have a worker and a grace time
// of their own (src/heavy-worker.ts).
const paymentsQueueOptions: Array<[string, ActivityOptions]> = [
  ...Object.entries(RetryPolicies),
  ...(AGGREGATE_STOCK_ACTIVITY_OPTIONS.taskQueue === HEAVY_TASK_QUEUE
    ? []
    : [['aggregateStock', AGGREGATE_STOCK_ACTIVITY_OPTIONS] as [string, ActivityOptions]]),
];

describe('shutdown grace time of the payments worker', () => {
  // What SIGTERM must not cut short is the attempt in flight: its start-to-close timeout. A
  // schedule-to-close timeout bounds all attempts with their waits; the retries it allows are
  // scheduled by the server, on whichever worker polls then.
  const attempts = paymentsQueueOptions.map(([preset, options]) => ({
    preset,
    ms: msToNumber(options.startToCloseTimeout),
  }));

  it('covers the longest activity attempt of its queue, so SIGTERM never cuts one short', () => {
    expect(attempts.map((a) => a.preset)).toEqual(
      expect.arrayContaining(['databaseStep', 'warehouseNotification', 'confirmationMail']),
    );
    expect(Math.max(...attempts.map((a) => a.ms))).toBe(LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS);
    expect(PAYMENTS_WORKER_SHUTDOWN_GRACE_MS).toBeGreaterThan(LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS);
    expect(PAYMENTS_WORKER_SHUTDOWN_FORCE_MS).toBeGreaterThan(PAYMENTS_WORKER_SHUTDOWN_GRACE_MS);
  });

  it('drains within a minute: the stock aggregation, up to 7 minutes, runs on the heavy worker', () => {
    expect(AGGREGATE_STOCK_ACTIVITY_OPTIONS.taskQueue).toBe(HEAVY_TASK_QUEUE);
    expect(PAYMENTS_WORKER_SHUTDOWN_FORCE_MS).toBeLessThanOrEqual(60_000);
  });

  it('is shorter than what the process managers in deploy/ wait before SIGKILL', () => {
    const deploy = path.join(__dirname, '../../deploy');
    const unit = readFileSync(path.join(deploy, 'systemd/order-payments-worker@.service'), 'utf8');
    const stopSec = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1]);
    expect(stopSec * 1000).toBeGreaterThan(PAYMENTS_WORKER_SHUTDOWN_FORCE_MS);
    const k8s = readFileSync(path.join(deploy, 'kubernetes/worker.yaml'), 'utf8');
    const grace = Number(/terminationGracePeriodSeconds:\s*(\d+)/.exec(k8s)?.[1]);
    expect(grace * 1000).toBeGreaterThan(PAYMENTS_WORKER_SHUTDOWN_FORCE_MS);
  });
});

describe('operations settings', () => {
  it('validates the worker slots, addresses and the watchdog threshold with a message that says what to fix', () => {
    let problems: string[] = [];
    try {
      loadConfig({
        SMTP_MAX_CONNECTIONS: '0',
        WORKER_MAX_CONCURRENT_ACTIVITIES: '0',
        WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '1',
        WORKER_METRICS_ADDRESS: 'http://0.0.0.0:9464',
        TASK_QUEUE_NO_POLLER_ALERT_SECONDS: '30',
      });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      problems = (error as ConfigError).problems;
    }
    expect(problems).toEqual([
      expect.stringMatching(/^SMTP_MAX_CONNECTIONS: /),
      expect.stringMatching(/^WORKER_MAX_CONCURRENT_ACTIVITIES: /),
      expect.stringMatching(/^WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: /),
      expect.stringMatching(/^WORKER_METRICS_ADDRESS: must be host:port .* or off/),
      expect.stringMatching(/^TASK_QUEUE_NO_POLLER_ALERT_SECONDS: must be 0 \(off\) or 90-86400/),
    ]);
  });

  it('has defaults that work on a laptop', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      WORKER_MAX_CONCURRENT_ACTIVITIES: 100,
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: 40,
      DATABASE_POOL_MAX: 10,
      SMTP_MAX_CONNECTIONS: 5,
      TASK_QUEUE_NO_POLLER_ALERT_SECONDS: 120,
      TASK_QUEUE_WATCHDOG_INTERVAL_SECONDS: 30,
    });
    expect(config.WORKER_METRICS_ADDRESS).toBeUndefined();
    expect(loadConfig({ WORKER_METRICS_ADDRESS: 'off' }).WORKER_METRICS_ADDRESS).toBe('off');
    expect(
      loadConfig({ TASK_QUEUE_NO_POLLER_ALERT_SECONDS: '0' }).TASK_QUEUE_NO_POLLER_ALERT_SECONDS,
    ).toBe(0);
  });
});

describe('worker health endpoints', () => {
  it('stays live while draining (restarting would cut activities short) but not ready; dead once failed', async () => {
    let state: State = 'RUNNING';
    const server = await startWorkerHealthServer({
      address: '127.0.0.1:0',
      workers: [{ getState: () => state }],
    });
    const status = async (route: string) => (await fetch(`${server.url}${route}`)).status;
    try {
      expect([await status('/healthz'), await status('/readyz')]).toEqual([200, 200]);
      state = 'DRAINING';
      expect([await status('/healthz'), await status('/readyz')]).toEqual([200, 503]);
      state = 'FAILED';
      expect([await status('/healthz'), await status('/readyz')]).toEqual([503, 503]);
      expect(await status('/metrics')).toBe(404);
    } finally {
      await server.close();
    }
  });
});
