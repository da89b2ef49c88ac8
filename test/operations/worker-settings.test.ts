import { readFileSync } from 'node:fs';
import path from 'node:path';
import { msToNumber } from '@temporalio/common/lib/time';
import type { State } from '@temporalio/worker';
import { ConfigError, loadConfig } from '../../src/config';
import { startWorkerHealthServer } from '../../src/monitoring';
import {
  LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS,
  PAYMENTS_WORKER_SHUTDOWN_FORCE_MS,
  PAYMENTS_WORKER_SHUTDOWN_GRACE_MS,
} from '../../src/worker';

// The workflows whose activities run on the `payments` worker. A workflow file that schedules
// activities on that queue belongs here; the heavy queue's (batch, invoice) have a worker and a
// grace time of their own (src/heavy-worker.ts).
const PAYMENTS_QUEUE_WORKFLOWS = [
  'activity-options.ts',
  'payment.ts',
  'order.ts',
  'alert.ts',
  'stock.ts',
  'retry.ts',
];

describe('shutdown grace time of the payments worker', () => {
  const timeouts = PAYMENTS_QUEUE_WORKFLOWS.flatMap((file) => {
    const source = readFileSync(path.join(__dirname, '../../src/workflows', file), 'utf8');
    return [...source.matchAll(/(?:startToClose|scheduleToClose)Timeout:\s*'([^']+)'/g)].map(
      (m) => ({ file, timeout: m[1]!, ms: msToNumber(m[1] as never) }),
    );
  });

  it('covers the longest activity timeout of its queue, so SIGTERM never cuts an attempt short', () => {
    // One per distinct activity profile: the shared database profile, mail, warehouse, alert, stock.
    expect(timeouts.length).toBeGreaterThanOrEqual(5);
    const longest = Math.max(...timeouts.map((t) => t.ms));
    expect(longest).toBe(LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS);
    expect(PAYMENTS_WORKER_SHUTDOWN_GRACE_MS).toBeGreaterThan(LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS);
    expect(PAYMENTS_WORKER_SHUTDOWN_FORCE_MS).toBeGreaterThan(PAYMENTS_WORKER_SHUTDOWN_GRACE_MS);
  });

  it('is shorter than what the process managers in deploy/ wait before SIGKILL', () => {
    const deploy = path.join(__dirname, '../../deploy');
    const unit = readFileSync(path.join(deploy, 'systemd/order-payments-worker.service'), 'utf8');
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
